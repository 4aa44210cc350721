package reports

import (
	"time"

	"github.com/oapi-codegen/nullable"
	"github.com/payments-api/payments-api/internal/api"
	"github.com/payments-api/payments-api/internal/db"
)

// JobTypeReport is the type of a job that builds a report.
const JobTypeReport = "report"

// Job statuses.
const (
	StatusQueued    = "queued"
	StatusRunning   = "running"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusCanceled  = "canceled"
)

// JobFailedProblemType is the problem type of a failed job's error member. The HTTP layer
// lists it with the others, so the URI resolves to its page.
const JobFailedProblemType = "/problems/job-failed"

// Finished reports whether the job reached a final status.
func Finished(job db.Job) bool { return job.FinishedAt != nil }

// JobResource is the job as the API shows it: in responses and in event payloads.
func JobResource(job db.Job) api.Job {
	res := api.Job{
		Id:         job.ID,
		Type:       api.JobType(job.Type),
		Status:     api.JobStatus(job.Status),
		CreatedAt:  job.CreatedAt.UTC(),
		StartedAt:  nullableTime(job.StartedAt),
		FinishedAt: nullableTime(job.FinishedAt),
		ExpiresAt:  nullableTime(job.ExpiresAt),
	}
	res.Progress.RowsProcessed = job.RowsProcessed
	if job.Status == StatusSucceeded && job.ReportID != nil {
		res.Result = &api.JobResult{ReportId: *job.ReportID, DownloadUrl: downloadURL(*job.ReportID)}
	}
	if job.Status == StatusFailed {
		detail := "The job failed."
		if job.ErrorDetail != nil {
			detail = *job.ErrorDetail
		}
		res.Error = &api.Problem{
			Type: JobFailedProblemType, Title: "Job failed", Status: 500, Detail: detail,
		}
	}
	return res
}

// ReportResource is the report's metadata as the API shows it.
func ReportResource(r db.Report, expiresAt time.Time) api.Report {
	return api.Report{
		Id:          r.ID,
		JobId:       r.JobID,
		Type:        api.ReportType(r.Type),
		Format:      api.ReportFormat(r.Format),
		CreatedGte:  r.CreatedGte.UTC(),
		CreatedLt:   r.CreatedLt.UTC(),
		RowCount:    r.RowCount,
		ByteSize:    r.ByteSize,
		DownloadUrl: downloadURL(r.ID),
		CreatedAt:   r.CreatedAt.UTC(),
		ExpiresAt:   expiresAt.UTC(),
	}
}

func downloadURL(reportID string) string { return "/reports/" + reportID + "/download" }

func nullableTime(t *time.Time) nullable.Nullable[time.Time] {
	if t == nil {
		return nullable.NewNullNullable[time.Time]()
	}
	return nullable.NewNullableWithValue(t.UTC())
}
