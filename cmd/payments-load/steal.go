package main

import (
	"fmt"
	"io"
)

// On a virtual machine the hypervisor may run other guests on the cores this one believes it
// has, and /proc/stat counts the time it took as steal. A run that lost much of it measured a
// slower machine than one that lost none: the ratios of alternating slices mostly hold up,
// the rates and the CPU per request do not. The tool prints the share, so that a reader can
// tell such a run and set it aside.

// cpuTimes is the machine's CPU time so far, in seconds, all of it and the stolen part.
type cpuTimes struct{ all, steal float64 }

// cpuTimes reads the machine's CPU time from /proc/stat's cpu line.
func (r procReader) cpuTimes() (cpuTimes, error) {
	st, err := r.fs.Stat()
	if err != nil {
		return cpuTimes{}, err
	}
	c := st.CPUTotal // guest time is counted in user time already
	return cpuTimes{all: c.User + c.Nice + c.System + c.Idle + c.Iowait + c.IRQ + c.SoftIRQ + c.Steal, steal: c.Steal}, nil
}

// stealShare is the share of the machine's CPU time stolen between two readings.
func stealShare(before, after cpuTimes) float64 {
	all := after.all - before.all
	if all <= 0 {
		return 0
	}
	return (after.steal - before.steal) / all
}

// reportSteal prints the share stolen between two readings, or why it was not measured.
func reportSteal(out io.Writer, before, after cpuTimes, err error) error {
	if err != nil {
		_, err = fmt.Fprintf(out, "cpu steal not measured: %v\n", err)
		return err
	}
	_, err = fmt.Fprintf(out, "cpu steal: %.1f %% of the machine's CPU time during the load\n", 100*stealShare(before, after))
	return err
}
