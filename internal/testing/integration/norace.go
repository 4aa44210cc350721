//go:build !race

package integration

// raceDetector is whether the tests run with -race (see race.go).
const raceDetector = false
