package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/testing/apitest"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
	"github.com/payments-api/payments-api/internal/testing/integration"
)

// BenchmarkReportBuild times a payments report of 10,000 and of 100,000 rows, from the 202
// to the poll that sees it succeeded, in a real server process, and reports that process's
// peak resident memory (VmHWM in /proc) before the first report and after the last: a
// streamed build should leave the second nearly the same at both sizes.
//
//	go test ./cmd/payments-api -run '^$' -bench ReportBuild -benchtime 5x
func BenchmarkReportBuild(b *testing.B) {
	for _, rows := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			url := dbtest.NewURL(b)
			p := startProcess(b, url, map[string]string{"PROCESS_ROLE": roleAll, "JOB_TIMEOUT": "5m", "JOB_RESCUE_AFTER": "10m", "LOG_LEVEL": "warn"})
			integration.SeedPayments(b, integration.Pool(b, url), processKey, rows)
			client := apitest.NewClient(b, p.Base, processKey)
			idle := peakRSS(b, p.Pid())
			b.ResetTimer()
			for b.Loop() {
				integration.WaitForJob(b, client, integration.RequestReport(b, client), "succeeded", 5*time.Minute)
			}
			b.StopTimer()
			b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(idle/1024, "idle-peak-RSS-MiB")
			b.ReportMetric(peakRSS(b, p.Pid())/1024, "peak-RSS-MiB")
		})
	}
}

// peakRSS is a process's peak resident set size in KiB, as Linux records it.
func peakRSS(tb testing.TB, pid int) float64 {
	tb.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Skipf("peak RSS needs Linux's /proc: %v", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kb
		}
	}
	tb.Fatal("no VmHWM in /proc status")
	return 0
}
