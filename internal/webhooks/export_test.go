package webhooks

// ErrAttemptRaced lets the external tests see which attempt lost a race.
var ErrAttemptRaced = errAttemptRaced
