package webhooks

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
)

// failureReason says why an attempt got no response, in one of a few fixed texts recorded
// with the attempt for the customer to read. The error itself is not shown: it names our
// resolver, the addresses dialled and library internals, which are the operator's to know.
func failureReason(err error) string {
	var (
		dnsErr    *net.DNSError
		netErr    net.Error
		certErr   *tls.CertificateVerificationError
		recordErr tls.RecordHeaderError
		alertErr  tls.AlertError
	)
	switch {
	case errors.Is(err, ErrAddressRefused):
		return "the address is not allowed"
	case errors.As(err, &dnsErr):
		return "the host name did not resolve"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timed out"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return "the address is unreachable"
	case errors.As(err, &certErr):
		return "the TLS certificate was not accepted"
	case errors.As(err, &recordErr), errors.As(err, &alertErr), errors.Is(err, http.ErrSchemeMismatch):
		return "the TLS handshake failed"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the connection closed before a response"
	default:
		return "the request failed"
	}
}
