//go:build !race

package handlers_test

// raceSlowdown scales time bounds: the race detector slows the server several times.
const raceSlowdown = 1
