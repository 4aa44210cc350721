package reports

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/domain"
	"github.com/payments-api/payments-api/internal/events"
	"github.com/payments-api/payments-api/internal/jobs"
	"github.com/riverqueue/river"
)

// DefaultPageSize is how many source rows one page, and so one chunk and one transaction,
// holds: a few hundred kilobytes, whatever the report's size.
const DefaultPageSize = 1000

// maxAttempts is how often a build is tried before its job fails. Every attempt resumes
// where the last one stopped, so retries cost no repeated work.
const maxAttempts = 5

// BuildArgs is the River job that builds the report of one job. The account rides along:
// every row of the job is looked up by (account_id, job_id).
type BuildArgs struct {
	AccountID string `json:"account_id"`
	JobID     string `json:"job_id"`
}

// Kind names the job in river_job.
func (BuildArgs) Kind() string { return "report.build" }

// InsertOpts are the defaults every build job is inserted with.
func (BuildArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: maxAttempts} }

// Worker builds reports.
type Worker struct {
	river.WorkerDefaults[BuildArgs]
	pool      *pgxpool.Pool
	outbox    *events.Outbox
	retention time.Duration
	pageSize  int32
}

// NewWorker records report.succeeded and report.failed in outbox, keeps finished jobs for
// retention and reads pageSize rows per transaction.
func NewWorker(pool *pgxpool.Pool, outbox *events.Outbox, retention time.Duration, pageSize int) *Worker {
	return &Worker{pool: pool, outbox: outbox, retention: retention, pageSize: int32(pageSize)}
}

// errCanceled stops a build whose job a client canceled.
var errCanceled = errors.New("the job was canceled")

// Work runs the build one transaction at a time: one to start, then one per page, the last
// of which also finishes the job. Each begins by locking the job row and reading its status,
// so a cancel is seen before the next page, and a second run of a finished job (a duplicate
// delivery, a rescue of a worker that was only slow) does nothing.
//
// A run that JOB_TIMEOUT stops after it wrote a page is snoozed rather than failed: the next
// run resumes after that page, and a snooze does not use up an attempt, so a report takes as
// many runs as its size needs. Only runs that wrote nothing count against maxAttempts.
func (w *Worker) Work(ctx context.Context, job *river.Job[BuildArgs]) error {
	pages, err := w.build(ctx, job)
	switch {
	case errors.Is(err, errCanceled):
		return river.JobCancel(err) // final: River will not retry it
	case err != nil && pages > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return river.JobSnooze(0) // available again at once
	case err != nil && job.Attempt >= job.MaxAttempts:
		return errors.Join(err, w.fail(ctx, job))
	}
	return err
}

// build runs the job's transactions until it is done, and says how many pages it wrote.
func (w *Worker) build(ctx context.Context, job *river.Job[BuildArgs]) (pages int, err error) {
	if done, err := w.start(ctx, job.Args.AccountID, job.Args.JobID); err != nil || done {
		return 0, err
	}
	for ; ; pages++ {
		done, err := w.step(ctx, job)
		if err != nil || done {
			return pages, err
		}
	}
}

// start marks the job running. done is true when there is nothing to do.
func (w *Worker) start(ctx context.Context, accountID, jobID string) (done bool, err error) {
	err = db.InTx(ctx, w.pool, func(tx db.Tx) error {
		j, err := lockForWork(ctx, tx, accountID, jobID)
		if err != nil || Finished(j) {
			done = true
			return err
		}
		if _, err := tx.JobStart(ctx, db.JobStartParams{AccountID: accountID, ID: jobID}); err != nil {
			return fmt.Errorf("start job %s: %w", jobID, err)
		}
		return nil
	})
	return done, err
}

// lockForWork locks the job (see JobLock) and reads its status: the check every transaction
// of a build starts with. A canceled job is errCanceled; another finished job is returned as
// is, for the caller to stop. A job deleted by the retention sweep counts as canceled.
func lockForWork(ctx context.Context, tx db.Tx, accountID, jobID string) (db.Job, error) {
	if err := tx.JobLock(ctx, jobID); err != nil {
		return db.Job{}, fmt.Errorf("lock job %s: %w", jobID, err)
	}
	j, err := tx.JobLockForWork(ctx, db.JobLockForWorkParams{AccountID: accountID, ID: jobID})
	switch {
	case errors.Is(db.Translate(err), domain.ErrNotFound), err == nil && j.Status == StatusCanceled:
		return j, errCanceled
	case err != nil:
		return j, fmt.Errorf("lock job %s: %w", jobID, err)
	}
	return j, nil
}

// step writes the next page in one transaction, and finishes the job in the same one when
// that page is the last.
func (w *Worker) step(ctx context.Context, job *river.Job[BuildArgs]) (done bool, err error) {
	err = db.InTx(ctx, w.pool, func(tx db.Tx) error {
		j, err := lockForWork(ctx, tx, job.Args.AccountID, job.Args.JobID)
		if err != nil || Finished(j) {
			done = true
			return err
		}
		req, err := tx.ReportRequestGet(ctx, db.ReportRequestGetParams{AccountID: j.AccountID, JobID: j.ID})
		if err != nil {
			return fmt.Errorf("get report request of %s: %w", j.ID, err)
		}
		src, err := sourceFor(req.Type)
		if err != nil {
			return err
		}
		p, err := src.fetch(ctx, tx.Queries, j.AccountID, req, w.pageSize, req.Chunks == 0)
		if err != nil {
			return fmt.Errorf("read page of %s: %w", j.ID, err)
		}
		if p.rows > 0 {
			if err := w.writePage(ctx, tx, j, &req, p); err != nil {
				return err
			}
		}
		if p.rows == int(w.pageSize) {
			return nil // more may follow
		}
		done = true
		return w.finish(ctx, tx, job, j, req, src)
	})
	return done, err
}

// writePage stores one page as the next chunk, moves the cursor past it and adds its rows
// to the progress: one transaction, so a page is written exactly once.
func (w *Worker) writePage(ctx context.Context, tx db.Tx, j db.Job, req *db.ReportRequest, p page) error {
	chunk := db.ReportChunkInsertParams{AccountID: j.AccountID, JobID: j.ID, Seq: req.Chunks, Data: p.data}
	if err := tx.ReportChunkInsert(ctx, chunk); err != nil {
		return fmt.Errorf("write chunk %d of %s: %w", req.Chunks, j.ID, err)
	}
	err := tx.ReportRequestAdvance(ctx, db.ReportRequestAdvanceParams{
		AccountID: j.AccountID, JobID: j.ID, CursorCreatedAt: &p.lastCreatedAt, CursorID: &p.lastID, Bytes: int64(len(p.data)),
	})
	if err != nil {
		return fmt.Errorf("advance cursor of %s: %w", j.ID, err)
	}
	progress := db.JobAddProgressParams{AccountID: j.AccountID, ID: j.ID, Rows: int64(p.rows)}
	if err := tx.JobAddProgress(ctx, progress); err != nil {
		return fmt.Errorf("record progress of %s: %w", j.ID, err)
	}
	req.Chunks, req.Bytes = req.Chunks+1, req.Bytes+int64(len(p.data))
	return nil
}

// finish closes the file, creates the report, marks the job succeeded, records
// report.succeeded in the outbox and completes the River job, in the transaction that wrote
// the last page: a crash leaves either all of it or none, and a retry of a finished job
// stops at lockForWork.
func (w *Worker) finish(ctx context.Context, tx db.Tx, job *river.Job[BuildArgs], j db.Job, req db.ReportRequest, src source) error {
	tail := closing(req.Format)
	if req.Chunks == 0 {
		tail = src.empty(req.Format)
	}
	if len(tail) > 0 {
		chunk := db.ReportChunkInsertParams{AccountID: j.AccountID, JobID: j.ID, Seq: req.Chunks, Data: tail}
		if err := tx.ReportChunkInsert(ctx, chunk); err != nil {
			return fmt.Errorf("write last chunk of %s: %w", j.ID, err)
		}
		req.Chunks, req.Bytes = req.Chunks+1, req.Bytes+int64(len(tail))
	}
	rows, err := tx.JobGetByID(ctx, db.JobGetByIDParams{AccountID: j.AccountID, ID: j.ID})
	if err != nil {
		return fmt.Errorf("reread job %s: %w", j.ID, err)
	}
	report, err := tx.ReportInsert(ctx, db.ReportInsertParams{
		ID: domain.NewID("rpt"), AccountID: j.AccountID, JobID: j.ID, Type: req.Type, Format: req.Format,
		CreatedGte: req.CreatedGte, CreatedLt: req.CreatedLt,
		RowCount: rows.RowsProcessed, ByteSize: req.Bytes, Chunks: req.Chunks,
	})
	if err != nil {
		return fmt.Errorf("insert report of %s: %w", j.ID, err)
	}
	finished, err := tx.JobFinish(ctx, db.JobFinishParams{
		AccountID: j.AccountID, ID: j.ID, Status: StatusSucceeded, ReportID: &report.ID, RetentionSeconds: w.retention.Seconds(),
	})
	if err != nil {
		return fmt.Errorf("finish job %s: %w", j.ID, err)
	}
	if err := w.outbox.Record(ctx, tx, j.AccountID, events.ReportSucceeded, JobResource(finished)); err != nil {
		return err
	}
	if err := jobs.CompleteTx(ctx, tx, job); err != nil {
		return fmt.Errorf("complete queue entry of %s: %w", j.ID, err)
	}
	return nil
}

// fail marks the job failed after its last attempt and records report.failed. It runs on a
// context of its own: the attempt's may be the one that just timed out.
func (w *Worker) fail(ctx context.Context, job *river.Job[BuildArgs]) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	detail := fmt.Sprintf("The report could not be built in %d attempts. Request a new one.", job.Attempt)
	return w.failJob(ctx, job.Args.AccountID, job.Args.JobID, detail)
}

// failJob marks an unfinished job failed with detail and records report.failed, in one
// transaction that takes the job's lock first, as every step of a build does.
func (w *Worker) failJob(ctx context.Context, accountID, jobID, detail string) error {
	return db.InTx(ctx, w.pool, func(tx db.Tx) error {
		j, err := lockForWork(ctx, tx, accountID, jobID)
		if err != nil || Finished(j) {
			return nil // canceled or finished meanwhile: nothing to fail
		}
		failed, err := tx.JobFinish(ctx, db.JobFinishParams{
			AccountID: j.AccountID, ID: j.ID, Status: StatusFailed, ErrorDetail: &detail, RetentionSeconds: w.retention.Seconds(),
		})
		if err != nil {
			return fmt.Errorf("fail job %s: %w", j.ID, err)
		}
		return w.outbox.Record(ctx, tx, j.AccountID, events.ReportFailed, JobResource(failed))
	})
}
