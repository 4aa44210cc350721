package reports

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/domain"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// DefaultRetention is how long a finished job and its report are kept.
const DefaultRetention = 7 * 24 * time.Hour

// MaxRange bounds what one report may cover, so no request costs more than a year of rows.
const MaxRange = 366 * 24 * time.Hour

// Queue is the part of the River client a request needs: *river.Client[pgx.Tx] is one.
// Both methods join the caller's transaction, so the queue entry commits or rolls back with
// the job row.
type Queue interface {
	InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
	JobCancelTx(ctx context.Context, tx pgx.Tx, jobID int64) (*rivertype.JobRow, error)
	JobRetryTx(ctx context.Context, tx pgx.Tx, jobID int64) (*rivertype.JobRow, error)
}

// Service owns report jobs and reports.
type Service struct {
	pool      *pgxpool.Pool
	queue     Queue
	retention time.Duration
}

// NewService enqueues on queue and keeps finished jobs for retention.
func NewService(pool *pgxpool.Pool, queue Queue, retention time.Duration) *Service {
	return &Service{pool: pool, queue: queue, retention: retention}
}

// Params is a POST /reports body.
type Params struct {
	Type       string // "payments" or "refunds"
	Format     string // "csv" or "json"
	CreatedGte time.Time
	CreatedLt  time.Time
}

// Validate checks what the schema cannot: the range's order and width, and that each bound
// can be written back in the report as RFC 3339 does, with a four-digit year in UTC (an
// offset or the rounding of RangeBound may carry one past 9999 or before 0000).
func (p Params) Validate() error {
	switch {
	case !writable(p.CreatedGte):
		return &domain.ValidationError{Field: "/created_gte", Message: outOfYears}
	case !writable(p.CreatedLt):
		return &domain.ValidationError{Field: "/created_lt", Message: outOfYears}
	case !p.CreatedLt.After(p.CreatedGte):
		return &domain.ValidationError{Field: "/created_lt", Message: "must be after created_gte"}
	case p.CreatedLt.Sub(p.CreatedGte) > MaxRange:
		return &domain.ValidationError{Field: "/created_lt", Message: "the range may cover at most 366 days"}
	}
	return nil
}

const outOfYears = "must fall within the years 0000 to 9999 in UTC, to the microsecond"

// writable reports whether t, in UTC, has a year RFC 3339 can write.
func writable(t time.Time) bool {
	y := t.UTC().Year()
	return y >= 0 && y <= 9999
}

// Request enqueues a report in tx: the job row, its parameters and the River job that will
// build it. Nothing runs until tx commits, and if it rolls back none of them exist.
func (s *Service) Request(ctx context.Context, tx db.Tx, accountID string, p Params) (db.Job, error) {
	// The range as the database compares it, so that one inside a microsecond is refused
	// here rather than by the table's CHECK (created_lt > created_gte).
	p.CreatedGte, p.CreatedLt = db.RangeBound(p.CreatedGte), db.RangeBound(p.CreatedLt)
	if err := p.Validate(); err != nil {
		return db.Job{}, err
	}
	jobID := domain.NewID("job")
	pgxTx, err := tx.PgxTx(ctx)
	if err != nil {
		return db.Job{}, err
	}
	queued, err := s.queue.InsertTx(ctx, pgxTx, BuildArgs{AccountID: accountID, JobID: jobID}, nil)
	if err != nil {
		return db.Job{}, fmt.Errorf("enqueue report job: %w", err)
	}
	job, err := tx.JobInsert(ctx, db.JobInsertParams{
		ID: jobID, AccountID: accountID, Type: JobTypeReport, RiverJobID: queued.Job.ID,
	})
	if err != nil {
		return db.Job{}, fmt.Errorf("insert job: %w", err)
	}
	err = tx.ReportRequestInsert(ctx, db.ReportRequestInsertParams{
		AccountID: accountID, JobID: jobID, Type: p.Type, Format: p.Format, CreatedGte: p.CreatedGte, CreatedLt: p.CreatedLt,
	})
	if err != nil {
		return db.Job{}, fmt.Errorf("insert report request: %w", err)
	}
	return job, nil
}

// GetJob returns one job of the account.
func (s *Service) GetJob(ctx context.Context, accountID, id string) (db.Job, error) {
	job, err := db.Reads(s.pool).JobGetByID(ctx, db.JobGetByIDParams{AccountID: accountID, ID: id})
	if err != nil {
		return db.Job{}, fmt.Errorf("get job %s: %w", id, db.Translate(err))
	}
	return job, nil
}

// CancelJob cancels a queued or running job (domain.ErrJobNotCancelable once it finished).
// Two guards, in one transaction: River's cancel keeps a queued job from ever being fetched,
// and the canceled status, which the worker reads under the job's lock at the start of every
// transaction it runs, stops a job that is already running before its next page (and a job
// fetched just before this commit before its first).
func (s *Service) CancelJob(ctx context.Context, accountID, id string) (db.Job, error) {
	var job db.Job
	err := db.InTx(ctx, s.pool, func(tx db.Tx) error {
		if err := tx.JobLock(ctx, id); err != nil {
			return fmt.Errorf("lock job %s: %w", id, err)
		}
		var err error
		job, err = tx.JobCancel(ctx, db.JobCancelParams{
			AccountID: accountID, ID: id, RetentionSeconds: s.retention.Seconds(),
		})
		if errors.Is(db.Translate(err), domain.ErrNotFound) {
			if _, err := tx.JobGetByID(ctx, db.JobGetByIDParams{AccountID: accountID, ID: id}); err != nil {
				err = db.NotFoundOrAccountDeleted(ctx, tx.Queries, accountID, err)
				return fmt.Errorf("cancel job %s: %w", id, db.Translate(err))
			}
			return domain.ErrJobNotCancelable
		}
		if err != nil {
			return fmt.Errorf("cancel job %s: %w", id, err)
		}
		pgxTx, err := tx.PgxTx(ctx)
		if err != nil {
			return err
		}
		if _, err := s.queue.JobCancelTx(ctx, pgxTx, job.RiverJobID); err != nil && !errors.Is(err, river.ErrNotFound) {
			return fmt.Errorf("cancel queued job %s: %w", id, err)
		}
		return nil
	})
	return job, err
}

// JobListParams filters and pages a list.
type JobListParams struct {
	db.Page
	Status *string
}

// ListJobs returns one page, newest first, and whether another page follows.
func (s *Service) ListJobs(ctx context.Context, accountID string, p JobListParams) ([]db.Job, bool, error) {
	q := db.Reads(s.pool)
	createdAt := func(id string) (time.Time, error) {
		j, err := q.JobGetByID(ctx, db.JobGetByIDParams{AccountID: accountID, ID: id})
		return j.CreatedAt, err
	}
	return db.ListPage(p.Page, "job", createdAt, func(after db.After, rowLimit int32) ([]db.Job, error) {
		// JobList, or JobListByStatus for one status: each is one range of its own index, so
		// the page's scan starts at the cursor (see PaymentList).
		if p.Status == nil {
			return q.JobList(ctx, db.JobListParams{
				AccountID: accountID, AfterCreatedAt: after.CreatedAt, AfterID: after.ID, RowLimit: rowLimit,
			})
		}
		return q.JobListByStatus(ctx, db.JobListByStatusParams{
			AccountID: accountID, Status: *p.Status, AfterCreatedAt: after.CreatedAt, AfterID: after.ID, RowLimit: rowLimit,
		})
	})
}

// sweepBatch is the most rows one statement of the sweep deletes. A chunk holds a page of
// rows, a few hundred kilobytes, so a batch is tens of megabytes at most.
const sweepBatch = 100

// SweepExpired deletes finished jobs past their retention, with their reports and chunks,
// and reports how many jobs went. The periodic sweep job runs it (see internal/jobs).
func (s *Service) SweepExpired(ctx context.Context) (int64, error) {
	return s.sweepExpired(ctx, sweepBatch)
}

// sweepExpired deletes at most batch rows per statement: each round deletes chunks of the
// jobs that expired first (see ReportChunkDeleteOfExpiredJobs), then those jobs whose chunks
// are all gone. Every round deletes something while expired jobs remain; a round that
// deleted no chunk and fewer jobs than a batch has reached the last of them (or the rest
// are locked, and the next sweep carries on).
func (s *Service) sweepExpired(ctx context.Context, batch int32) (int64, error) {
	q := db.New(db.PlannedPerRun(s.pool)) // each batch planned for the rows it meets
	var total int64
	for {
		chunks, err := q.ReportChunkDeleteOfExpiredJobs(ctx, batch)
		if err != nil {
			return total, fmt.Errorf("sweep chunks of expired jobs: %w", err)
		}
		n, err := q.JobDeleteExpired(ctx, batch)
		total += n
		if err != nil {
			return total, fmt.Errorf("sweep expired jobs: %w", err)
		}
		if chunks == 0 && n < int64(batch) {
			return total, nil
		}
	}
}

// RunNow is a test helper: every unfinished report job of the account that waits in the
// queue (not yet fetched, or between attempts after a failure) becomes due now, and a sweep
// job is enqueued to run now as well. The sweep is not the account's own, but it only ever
// deletes what has expired. It reports how many report jobs were made due; one a worker is
// running is left alone.
func (s *Service) RunNow(ctx context.Context, accountID string, sweep river.JobArgs) (int64, error) {
	var due int64
	err := db.InTx(ctx, s.pool, func(tx db.Tx) error {
		unfinished, err := tx.JobListUnfinishedByAccount(ctx, accountID)
		if err != nil {
			return fmt.Errorf("list unfinished jobs: %w", err)
		}
		pgxTx, err := tx.PgxTx(ctx)
		if err != nil {
			return err
		}
		for _, j := range unfinished {
			row, err := s.queue.JobRetryTx(ctx, pgxTx, j.RiverJobID)
			if errors.Is(err, river.ErrNotFound) {
				continue
			}
			if err != nil {
				return fmt.Errorf("make job %s due: %w", j.ID, err)
			}
			if row.State != rivertype.JobStateRunning {
				due++
			}
		}
		if _, err := s.queue.InsertTx(ctx, pgxTx, sweep, nil); err != nil {
			return fmt.Errorf("enqueue a sweep: %w", err)
		}
		return nil
	})
	return due, err
}
