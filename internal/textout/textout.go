// Package textout writes the load and chaos tools' reports: lines and tables written
// straight through, with the first write error kept and checked once at the end.
package textout

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Printer writes formatted text to W and keeps the first error in Err; after one, it writes
// nothing more.
type Printer struct {
	W   io.Writer
	Err error
}

// Printf writes as fmt.Fprintf does, unless an earlier write failed.
func (p *Printer) Printf(format string, args ...any) {
	if p.Err == nil {
		_, p.Err = fmt.Fprintf(p.W, format, args...)
	}
}

// FlushTable ends a table printed through table into tw: the first write error, or Flush's.
func FlushTable(table *Printer, tw *tabwriter.Writer) error {
	if table.Err != nil {
		return table.Err
	}
	return tw.Flush()
}
