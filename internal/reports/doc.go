// Package reports turns POST /reports into a durable job and builds the report in the
// background. A request writes the job row, the report's parameters and a River job in the
// caller's transaction (the one that claimed the Idempotency-Key). The worker then streams
// the source rows in keyset pages, writing each page as one chunk in one transaction that
// also moves the cursor and the progress, so memory does not grow with the number of rows
// and an interrupted build resumes where it stopped. The last transaction creates the report,
// finishes the job, records its event in the outbox and completes the River job, all at once.
//
// It also serves the job resource, GET and DELETE /jobs/{id} (JobResource, Service): a
// report is the only kind of job a client starts.
//
// It imports api (the resources it shows), db, domain, events, jobs (CompleteTx, to finish
// the River job in the report's last transaction), payments (the row resources) and River, with pgx for River's transaction type; never
// net/http or handlers.
package reports
