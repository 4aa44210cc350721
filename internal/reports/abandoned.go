package reports

import (
	"context"
	"fmt"

	"github.com/payments-api/payments-api/internal/db"
)

// abandonedDetail is the error a client reads on a job whose build stopped for good without
// finishing: River ran out of attempts while no attempt of ours saw the end (each one's
// process died, or was rescued as stuck).
const abandonedDetail = "The report could not be built: its build stopped too many times. Request a new one."

// FailAbandoned fails the jobs whose River job will never run again but which no attempt
// finished, and records report.failed for each: without it such a job would stay queued or
// running forever. The periodic sweep runs it; it returns how many jobs it failed.
func (w *Worker) FailAbandoned(ctx context.Context) (int64, error) {
	const batch = 100
	var total int64
	for {
		jobs, err := db.New(w.pool).JobListAbandoned(ctx, batch)
		if err != nil {
			return total, fmt.Errorf("list abandoned jobs: %w", err)
		}
		for _, j := range jobs {
			if err := w.failJob(ctx, j.AccountID, j.ID, abandonedDetail); err != nil {
				return total, err
			}
			total++
		}
		if len(jobs) < batch {
			return total, nil
		}
	}
}
