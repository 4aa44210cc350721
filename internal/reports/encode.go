package reports

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/payments"
)

// Report formats.
const (
	FormatCSV  = "csv"
	FormatJSON = "json"
)

// page is one page of source rows, encoded, and the cursor after it.
type page struct {
	data          []byte
	rows          int
	lastCreatedAt time.Time
	lastID        string
}

// source is what a report lists: payments or refunds.
type source interface {
	// fetch reads up to limit rows after req's cursor and encodes them; first means nothing
	// has been written yet, so the page opens the file (the CSV header, JSON's "[").
	fetch(ctx context.Context, q *db.Queries, accountID string, req db.ReportRequest, limit int32, first bool) (page, error)
	// empty is the whole file of a report without rows.
	empty(format string) []byte
}

// closing is what ends a file whose rows are all written.
func closing(format string) []byte {
	if format == FormatJSON {
		return []byte("\n]\n")
	}
	return nil
}

func sourceFor(reportType string) (source, error) {
	switch reportType {
	case "payments":
		return paymentsTable, nil
	case "refunds":
		return refundsTable, nil
	}
	return nil, fmt.Errorf("unknown report type %q", reportType)
}

// table is a source over one table's rows.
type table[Row any] struct {
	query    func(ctx context.Context, q *db.Queries, accountID string, req db.ReportRequest, limit int32) ([]Row, error)
	key      func(Row) (time.Time, string) // the keyset cursor: (created_at, id)
	columns  []column
	record   func(Row) []string     // one cell per column
	resource func(Row) (any, error) // the row as the API shows it, for JSON
}

func (t table[Row]) fetch(ctx context.Context, q *db.Queries, accountID string, req db.ReportRequest, limit int32, first bool) (page, error) {
	rows, err := t.query(ctx, q, accountID, req, limit)
	if err != nil || len(rows) == 0 {
		return page{}, err
	}
	var buf bytes.Buffer
	if req.Format == FormatCSV {
		t.writeCSV(&buf, rows, first)
	} else if err = t.writeJSON(&buf, rows, first); err != nil {
		return page{}, err
	}
	p := page{data: buf.Bytes(), rows: len(rows)}
	p.lastCreatedAt, p.lastID = t.key(rows[len(rows)-1])
	return p, nil
}

// column is one CSV column. Every text cell is neutralised when a spreadsheet would run it as
// a formula (see isFormula): a description is a client's free text, and for the rest (ids,
// enums, metadata as a JSON object) the check costs a byte and keeps a new column safe. A
// verbatim cell is one the server formats itself, an integer or a timestamp: it never starts
// with a formula character (amounts are never negative), and a prefix would make a number text.
type column struct {
	name     string
	verbatim bool
}

func (t table[Row]) writeCSV(buf *bytes.Buffer, rows []Row, first bool) {
	if first {
		for i, c := range t.columns {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeCSVCell(buf, c.name, false)
		}
		buf.WriteByte('\n')
	}
	for _, r := range rows {
		for i, cell := range t.record(r) {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeCSVCell(buf, cell, !t.columns[i].verbatim)
		}
		buf.WriteByte('\n')
	}
}

// writeJSON writes one array element per line, so the file reads well and splits easily.
func (t table[Row]) writeJSON(buf *bytes.Buffer, rows []Row, first bool) error {
	for i, r := range rows {
		switch {
		case first && i == 0:
			buf.WriteString("[\n")
		default:
			buf.WriteString(",\n")
		}
		res, err := t.resource(r)
		if err != nil {
			return err
		}
		line, err := json.Marshal(res)
		if err != nil {
			return err
		}
		buf.Write(line)
	}
	return nil
}

func (t table[Row]) empty(format string) []byte {
	if format == FormatJSON {
		return []byte("[]\n")
	}
	var buf bytes.Buffer
	t.writeCSV(&buf, nil, true)
	return buf.Bytes()
}

var paymentsTable = table[db.Payment]{
	query: func(ctx context.Context, q *db.Queries, accountID string, req db.ReportRequest, limit int32) ([]db.Payment, error) {
		afterCreatedAt, afterID := cursor(req)
		return q.PaymentReportPage(ctx, db.PaymentReportPageParams{
			AccountID: accountID, CreatedGte: req.CreatedGte, CreatedLt: req.CreatedLt,
			AfterCreatedAt: afterCreatedAt, AfterID: afterID, RowLimit: limit,
		})
	},
	key: func(p db.Payment) (time.Time, string) { return p.CreatedAt, p.ID },
	columns: []column{
		{name: "id"}, {name: "amount", verbatim: true}, {name: "currency"}, {name: "status"},
		{name: "amount_refunded", verbatim: true}, {name: "payment_method"}, {name: "failure_code"},
		{name: "description"}, {name: "metadata"},
		{name: "created_at", verbatim: true}, {name: "updated_at", verbatim: true},
	},
	record: func(p db.Payment) []string {
		return []string{p.ID, strconv.FormatInt(p.Amount, 10), p.Currency, p.Status, strconv.FormatInt(p.AmountRefunded, 10),
			p.PaymentMethod, deref(p.FailureCode), deref(p.Description), string(p.Metadata), timestamp(p.CreatedAt), timestamp(p.UpdatedAt)}
	},
	resource: func(p db.Payment) (any, error) { return payments.Resource(p) },
}

var refundsTable = table[db.Refund]{
	query: func(ctx context.Context, q *db.Queries, accountID string, req db.ReportRequest, limit int32) ([]db.Refund, error) {
		afterCreatedAt, afterID := cursor(req)
		return q.RefundReportPage(ctx, db.RefundReportPageParams{
			AccountID: accountID, CreatedGte: req.CreatedGte, CreatedLt: req.CreatedLt,
			AfterCreatedAt: afterCreatedAt, AfterID: afterID, RowLimit: limit,
		})
	},
	key: func(r db.Refund) (time.Time, string) { return r.CreatedAt, r.ID },
	columns: []column{
		{name: "id"}, {name: "payment_id"}, {name: "amount", verbatim: true}, {name: "currency"},
		{name: "status"}, {name: "reason"}, {name: "metadata"}, {name: "created_at", verbatim: true},
	},
	record: func(r db.Refund) []string {
		return []string{r.ID, r.PaymentID, strconv.FormatInt(r.Amount, 10), r.Currency, r.Status, deref(r.Reason),
			string(r.Metadata), timestamp(r.CreatedAt)}
	},
	resource: func(r db.Refund) (any, error) { return payments.RefundResource(r) },
}

// cursor is the (created_at, id) the next page starts after: the last row written, or,
// before the first page, (created_gte, "") which every row of the range follows (ids are
// never empty).
func cursor(req db.ReportRequest) (time.Time, string) {
	if req.CursorCreatedAt == nil || req.CursorID == nil {
		return req.CreatedGte, ""
	}
	return *req.CursorCreatedAt, *req.CursorID
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
