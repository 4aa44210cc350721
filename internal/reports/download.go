package reports

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/db"
)

// Get returns one report of the account and when it expires.
func (s *Service) Get(ctx context.Context, accountID, id string) (db.Report, time.Time, error) {
	row, err := db.Reads(s.pool).ReportGetByID(ctx, db.ReportGetByIDParams{AccountID: accountID, ID: id})
	if err != nil {
		return db.Report{}, time.Time{}, fmt.Errorf("get report %s: %w", id, db.Translate(err))
	}
	var expires time.Time
	if row.ExpiresAt != nil {
		expires = *row.ExpiresAt
	}
	return row.Report, expires, nil
}

// Content streams a report's bytes: each Read past the current chunk fetches the next one,
// within readWithin, so a download holds one chunk in memory however large the report is,
// and its reads are bounded one by one rather than all together. A report never changes
// once it exists, so reading its chunks in separate statements is consistent.
func (s *Service) Content(ctx context.Context, r db.Report, readWithin time.Duration) io.Reader {
	return &chunkReader{ctx: ctx, within: readWithin, pool: s.pool, accountID: r.AccountID, jobID: r.JobID, chunks: r.Chunks}
}

type chunkReader struct {
	ctx       context.Context // the download's: io.Reader's Read takes none
	within    time.Duration   // each chunk's read
	pool      *pgxpool.Pool
	accountID string
	jobID     string
	chunks    int32 // how many there are
	next      int32 // the next one to fetch
	buf       []byte
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.next >= r.chunks {
			return 0, io.EOF
		}
		chunk := db.ReportChunkGetParams{AccountID: r.accountID, JobID: r.jobID, Seq: r.next}
		ctx, cancel := context.WithTimeout(r.ctx, r.within)
		data, err := db.Reads(r.pool).ReportChunkGet(ctx, chunk)
		cancel()
		if err != nil {
			return 0, fmt.Errorf("read report chunk %d of job %s: %w", r.next, r.jobID, err)
		}
		r.buf, r.next = data, r.next+1
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}
