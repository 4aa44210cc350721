//go:build race

package integration

// raceDetector is whether the tests run with -race: the server they start is then built with
// it too, so the races it finds under the tests' load are reported as a test's own are.
const raceDetector = true
