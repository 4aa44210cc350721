package reports

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/db"
)

func TestWriteCSVCellNeutralisesFormulas(t *testing.T) {
	tests := []struct {
		name, cell, want string
	}{
		{"equals", "=1+1", `"'=1+1"`},
		{"plus", "+1", `"'+1"`},
		{"minus", "-1", `"'-1"`},
		{"at", "@SUM(A1)", `"'@SUM(A1)"`},
		{"tab", "\tx", "\"'\tx\""},
		{"carriage return", "\rx", "\"'\rx\""},
		{"hyperlink, its quotes doubled", `=HYPERLINK("http://x","y")`, `"'=HYPERLINK(""http://x"",""y"")"`},
		{"a single quote, so one quote is always the one added", "'90s", `"''90s"`},
		{"spaces before the formula, which a trimming reader drops", "  =1+1", `"'  =1+1"`},
		{"a line feed before the formula", "\n=1+1", "\"'\n=1+1\""},
		{"plain text", "Order 1001", `Order 1001`},
		{"empty", "", ``},
		{"formula character inside", "a=1+1", `a=1+1`},
		{"a leading space alone, quoted as encoding/csv does", " Order", `" Order"`},
		{"a comma", "a,b", `"a,b"`},
		{"a JSON object", `{"note":"=1+1"}`, `"{""note"":""=1+1""}"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			writeCSVCell(&buf, tt.cell, true)
			if buf.String() != tt.want {
				t.Fatalf("writeCSVCell(%q) = %s, want %s", tt.cell, buf.String(), tt.want)
			}
			// A CSV reader gets the text back, with exactly one quote added when neutralised.
			read, err := csv.NewReader(strings.NewReader(buf.String() + "\n")).Read()
			if tt.cell == "" {
				return // an empty line is no record
			}
			wantRead := tt.cell
			if strings.HasPrefix(tt.want, `"'`) {
				wantRead = "'" + tt.cell
			}
			if err != nil || len(read) != 1 || read[0] != wantRead {
				t.Errorf("read back %q (%v), want %q", read, err, wantRead)
			}
		})
	}
}

// TestWriteCSVCellQuotesAsEncodingCSV: a cell that is not neutralised is written byte for byte
// as encoding/csv writes it, so only formulas change in the reports.
func TestWriteCSVCellQuotesAsEncodingCSV(t *testing.T) {
	for _, cell := range []string{"", "a", "-5", "=1+1", `\.`, "a,b", `a"b`, "a\nb", "a\rb", " a", "\u00a0a", "é", `{"a":"b"}`} {
		var want bytes.Buffer
		w := csv.NewWriter(&want)
		_ = w.Write([]string{cell})
		w.Flush()
		var got bytes.Buffer
		writeCSVCell(&got, cell, false)
		if got.String()+"\n" != want.String() {
			t.Errorf("verbatim %q: %q, encoding/csv writes %q", cell, got.String(), want.String())
		}
	}
}

// TestCSVReportsNeutraliseTextColumns: both tables mark every text column, and only the
// server's integers and timestamps are left as they are.
func TestCSVReportsNeutraliseTextColumns(t *testing.T) {
	at := time.Date(2026, 11, 30, 15, 30, 54, 0, time.UTC)
	desc, reason := "=1+1", "@SUM(1+1)"
	var buf bytes.Buffer
	paymentsTable.writeCSV(&buf, []db.Payment{{
		ID: "pay_1", Amount: 5000, Currency: "usd", Status: "succeeded", PaymentMethod: "+pm", FailureCode: &reason,
		Description: &desc, Metadata: []byte(`{"a":"-1"}`), CreatedAt: at, UpdatedAt: at,
	}}, true)
	want := "id,amount,currency,status,amount_refunded,payment_method,failure_code,description,metadata,created_at,updated_at\n" +
		`pay_1,5000,usd,succeeded,0,"'+pm","'@SUM(1+1)","'=1+1","{""a"":""-1""}",2026-11-30T15:30:54Z,2026-11-30T15:30:54Z` + "\n"
	if buf.String() != want {
		t.Errorf("payments:\n%s\nwant\n%s", buf.String(), want)
	}

	buf.Reset()
	refundsTable.writeCSV(&buf, []db.Refund{{
		ID: "re_1", PaymentID: "pay_1", Amount: 300, Currency: "-usd", Status: "succeeded", Reason: &reason,
		Metadata: []byte(`{}`), CreatedAt: at,
	}}, false)
	want = `re_1,pay_1,300,"'-usd",succeeded,"'@SUM(1+1)",{},2026-11-30T15:30:54Z` + "\n"
	if buf.String() != want {
		t.Errorf("refunds:\n%s\nwant\n%s", buf.String(), want)
	}
}

// TestWriteCSVCellAllocatesNothing: reports run to a million rows, so a cell, neutralised or
// not, is written without an allocation.
func TestWriteCSVCellAllocatesNothing(t *testing.T) {
	var buf bytes.Buffer
	buf.Grow(1 << 10)
	cells := []string{"pay_1", "Order 1001", `=HYPERLINK("http://x","y")`, " =1", "a,b", ""}
	allocs := testing.AllocsPerRun(100, func() {
		buf.Reset()
		for _, c := range cells {
			writeCSVCell(&buf, c, true)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per line, want 0", allocs)
	}
}
