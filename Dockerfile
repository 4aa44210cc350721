# Build stage: a static binary (CGO_ENABLED=0), so the runtime image needs no C library.
# Generated code is committed, so no code generation happens here.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/payments-api ./cmd/payments-api

# Runtime stage: the binary alone (migrations and the spec are embedded in it), run as an
# unprivileged user. Alpine keeps a shell and wget for the compose health check.
FROM alpine:3.22
RUN adduser -D -H -u 10001 payments
COPY --from=build /out/payments-api /usr/local/bin/payments-api
USER 10001:10001
ENV LISTEN_ADDR=:8080
EXPOSE 8080
ENTRYPOINT ["payments-api"]
