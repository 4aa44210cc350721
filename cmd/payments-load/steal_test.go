package main

import (
	"math"
	"testing"
)

// TestStealShare: the share is the steal column's growth over the growth of all the columns
// of /proc/stat's cpu line (guest time is inside user time, and not counted twice).
func TestStealShare(t *testing.T) {
	f := newFakeProc(t)
	//                 user nice system idle iowait irq softirq steal guest guest_nice, in ticks
	f.write("stat", "cpu  1000 0 200 8000 100 0 50 150 500 0\n")
	before, err := f.reader().cpuTimes()
	if err != nil {
		t.Fatal(err)
	}
	f.write("stat", "cpu  1300 0 250 8400 100 0 50 250 800 0\n") // 850 ticks more, 100 of them stolen
	after, err := f.reader().cpuTimes()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := stealShare(before, after), 100.0/850; math.Abs(got-want) > 1e-9 {
		t.Errorf("steal share %v, want %v", got, want)
	}
	if got := stealShare(after, after); got != 0 {
		t.Errorf("no time passed: steal share %v, want 0", got)
	}
}
