package handlers

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/payments-api/payments-api/internal/api"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/idempotency"
	"github.com/payments-api/payments-api/internal/reports"
)

// pollAfter is the Retry-After, in seconds, of a job that has not finished.
const pollAfter = 1

// CreateReport enqueues a report at most once per Idempotency-Key: the claim, the job and
// its queue entry commit in one transaction, and the 202 is stored with them, so a retry
// answers the same job at the same Location.
func (s *Server) CreateReport(ctx context.Context, req api.CreateReportRequestObject) (api.CreateReportResponseObject, error) {
	acct := accountFrom(ctx)
	idem, err := idempotency.NewRequest(acct.ID, "reports.create", req.Params.IdempotencyKey, decodedBodyFrom(ctx))
	if err != nil {
		return nil, err
	}
	params := reports.Params{
		Type:       string(req.Body.Type),
		Format:     reports.FormatCSV,
		CreatedGte: req.Body.CreatedGte,
		CreatedLt:  req.Body.CreatedLt,
	}
	if req.Body.Format != nil {
		params.Format = string(*req.Body.Format)
	}
	res, err := s.idempotency.Do(ctx, idem, func(tx db.Tx) (idempotency.Response, error) {
		job, err := s.reports.Request(ctx, tx, acct.ID, params)
		if err != nil {
			return idempotency.Response{}, err
		}
		return jsonResponse(http.StatusAccepted, reports.JobResource(job),
			map[string]string{"Location": "/jobs/" + job.ID, "Retry-After": strconv.Itoa(pollAfter)})
	})
	if err != nil {
		return nil, err
	}
	return storedResponse(res), nil
}

// GetReport returns a report's metadata.
func (s *Server) GetReport(ctx context.Context, req api.GetReportRequestObject) (api.GetReportResponseObject, error) {
	r, expires, err := s.reports.Get(ctx, accountFrom(ctx).ID, req.Id)
	if err != nil {
		return nil, err
	}
	return api.GetReport200JSONResponse{Body: reports.ReportResource(r, expires)}, nil
}

// DownloadReport streams the file. A report never changes, so its id is a strong ETag.
func (s *Server) DownloadReport(ctx context.Context, req api.DownloadReportRequestObject) (api.DownloadReportResponseObject, error) {
	r, _, err := s.reports.Get(ctx, accountFrom(ctx).ID, req.Id)
	if err != nil {
		return nil, err
	}
	tag := `"` + r.ID + `"`
	if req.Params.IfMatch != nil {
		if err := reportIfMatch(ctx, *req.Params.IfMatch, r.ID, tag); err != nil {
			return nil, err
		}
	}
	if req.Params.IfNoneMatch != nil {
		match, err := ifNoneMatch(*req.Params.IfNoneMatch, r.ID) // a report's tag is its quoted id
		if err != nil {
			return nil, err
		}
		traceIfNoneMatch(ctx, match)
		if match {
			return notModified(tag), nil
		}
	}
	// A large report takes a slow client longer than a request may work: the download
	// lives as long as its connection, and each chunk's read and each write has
	// REQUEST_TIMEOUT of its own (see streamContext).
	stream, stop := streamContext(ctx)
	return reportFile{report: r, etag: tag, body: s.reports.Content(stream, r, s.requestTimeout), stop: stop, writeWithin: s.requestTimeout}, nil
}

// reportIfMatch evaluates If-Match against a report's tag, its quoted id, with RFC 9110's
// strong comparison, and records the decision: a *staleTagError when it names another
// report, or only a weak tag.
func reportIfMatch(ctx context.Context, value, id, tag string) error {
	tags, any, err := parseEntityTags("If-Match", value)
	if err != nil {
		return err
	}
	if !any && !slices.ContainsFunc(tags, func(t entityTag) bool { return !t.weak && t.opaque == id }) {
		err = &staleTagError{current: tag}
	}
	return traceIfMatch(ctx, err)
}

// reportFile writes a report's bytes as they are read from the database, in the format
// they were built in; the generated JSON response would decode them into memory first.
type reportFile struct {
	report      db.Report
	etag        string
	body        io.Reader
	stop        context.CancelFunc // ends the context body reads with
	writeWithin time.Duration      // each write's deadline (see streamWriter)
}

func (f reportFile) VisitDownloadReportResponse(w http.ResponseWriter) error {
	defer f.stop()
	contentType := "text/csv; charset=utf-8; header=present"
	if f.report.Format == reports.FormatJSON {
		contentType = "application/json"
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.FormatInt(f.report.ByteSize, 10))
	w.Header().Set("ETag", f.etag)
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s.%s"`, f.report.ID, f.report.Format))
	w.WriteHeader(http.StatusOK)
	_, err := io.Copy(streamWriter{w: w, rc: http.NewResponseController(w), within: f.writeWithin}, f.body)
	return err
}
