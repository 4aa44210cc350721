package main

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestWritesPaused(t *testing.T) {
	s := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	writes := []time.Duration{s(1), s(2), s(10.5), s(11), s(20), s(21)}
	for _, tt := range []struct {
		name         string
		began, until time.Duration
		want         time.Duration
	}{
		// From 2.5 s the load wrote nothing until 10.5 s: an 8 s pause, back at 11 s.
		{"a pause after the fault began", s(2.5), s(11), s(8)},
		// Writes went on for a while after the fault began; the pause counts from the last.
		{"a pause that starts later", s(0.5), s(11), s(8.5)},
		// The pause after until is not the fault's.
		{"until cuts off a later pause", s(0.5), s(2), s(1)},
		{"no write after until", s(0.5), s(30), -1},
	} {
		if got := writesPaused(writes, tt.began, tt.until); got != tt.want {
			t.Errorf("%s: writesPaused(%v, %v) = %v, want %v", tt.name, tt.began, tt.until, got, tt.want)
		}
	}
}

func TestHealCountsEachFailureOnce(t *testing.T) {
	s := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	records := []faultRecord{{name: "kill", began: s(10), cleared: s(11), back: s(15)}}
	heal(records, []exchange{
		{Call: s(9), Return: s(9.1), Status: 201, Write: true},
		{Call: s(10.1), Return: s(10.2), Status: 503, RetryAfter: true, Write: true},
		{Call: s(10.3), Return: s(12), Status: 0, Write: true},
		{Call: s(10.5), Return: s(10.6), Status: 500},
		{Call: s(13), Return: s(13.5), Status: 200},
		{Call: s(14), Return: s(16), Status: 201, Write: true},
	})
	r := records[0]
	if r.unavailable != 1 || r.failed != 2 || r.healed != s(13.5) || r.writesPaused != s(16-10) {
		t.Errorf("healed %v, %d unavailable, %d failed, writes paused %v; want 13.5s, 1, 2, 6s (from the fault to the next acknowledged write)",
			r.healed, r.unavailable, r.failed, r.writesPaused)
	}
}

func TestPromotionsAndWriteTargets(t *testing.T) {
	records := []faultRecord{
		{name: "kill -9 the primary", timelines: [2]int{1, 2}, promotes: 1, writesWithin: 15 * time.Second, writesPaused: 6 * time.Second},
		{name: "partition the app", timelines: [2]int{2, 2}, writesPaused: 30 * time.Second},
		{name: "switchover", timelines: [2]int{2, 3}, promotes: 1, writesWithin: 2 * time.Second, writesPaused: time.Second},
	}
	if c := checkPromotions(records); !c.ok || !strings.Contains(c.found, "[1 2 3]") {
		t.Errorf("promotions as due: %+v", c)
	}
	if c := checkWriteTargets(records); !c.ok {
		t.Errorf("every pause within its target (none for the partition): %+v", c)
	}
	records[2].timelines = [2]int{2, 4} // two standbys promoted where one was due
	records[0].writesPaused = -1        // writes never came back
	if c := checkPromotions(records); c.ok || !strings.Contains(c.found, "switchover") {
		t.Errorf("two promotions for one switchover passed: %+v", c)
	}
	if c := checkWriteTargets(records); c.ok || !strings.Contains(c.found, "never resumed") {
		t.Errorf("writes that never resumed passed: %+v", c)
	}
	if c := checkCleared(records); !c.ok {
		t.Errorf("every fault cleared: %+v", c)
	}
	records[1].notCleared = errors.New("wait-healthy 240: signal: killed")
	if c := checkCleared(records); c.ok || !strings.Contains(c.found, "partition the app") {
		t.Errorf("a fault whose cluster never healed passed: %+v", c)
	}
}

func TestChooseDBFaults(t *testing.T) {
	fs, err := chooseDBFaults([]string{"switchover", "kill-primary"})
	if err != nil || len(fs) != 2 || fs[0].name != "kill-primary" || fs[1].name != "switchover" {
		t.Errorf("chose %+v, %v; want kill-primary then switchover, the catalogue's order", fs, err)
	}
	if _, err := chooseDBFaults([]string{"kill-everything"}); err == nil || !strings.Contains(err.Error(), "kill-everything") {
		t.Errorf("an unknown fault: %v", err)
	}
}
