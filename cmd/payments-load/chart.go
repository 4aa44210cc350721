package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"text/template"
	"time"
)

// The chart is two panels of horizontal bars, one row per scenario: throughput (with the
// baseline's beside it, lighter) and latency percentiles (p50, p95, p99). It is plain SVG
// from a template, so it renders on GitHub and in any browser without a plotting library.

const (
	chartWidth  = 960
	labelWidth  = 90
	panelWidth  = (chartWidth - 2*labelWidth - 40) / 2
	rowHeight   = 46
	chartTop    = 70
	chartBottom = 30
)

type bar struct {
	X, Y, W, H float64
	Class      string
	Label      string
	LabelX     float64
}

type chartRow struct {
	Name string
	Y    float64
}

type chartData struct {
	Width, Height   int
	Title, Subtitle string
	Left, Right     float64 // x of each panel's bars
	Rows            []chartRow
	Bars            []bar
}

var chartTemplate = template.Must(template.New("chart").Funcs(template.FuncMap{"xml": xmlEscape}).Parse(
	`<svg xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}" font-family="sans-serif" font-size="12">
<style>.http{fill:#2b6cb0}.sql{fill:#a0aec0}.p50{fill:#2f855a}.p95{fill:#d69e2e}.p99{fill:#c53030}text.v{fill:#1a202c;font-size:10px}</style>
<rect width="100%" height="100%" fill="#fff"/>
<text x="10" y="20" font-size="15" font-weight="bold">{{xml .Title}}</text>
<text x="10" y="38" fill="#4a5568">{{xml .Subtitle}}</text>
<text x="{{.Left}}" y="60" font-weight="bold">Throughput, requests/s <tspan class="http" fill="#2b6cb0">■ server</tspan> <tspan fill="#a0aec0">■ SQL baseline</tspan></text>
<text x="{{.Right}}" y="60" font-weight="bold">Latency, ms <tspan fill="#2f855a">■ p50</tspan> <tspan fill="#d69e2e">■ p95</tspan> <tspan fill="#c53030">■ p99</tspan></text>
{{range .Rows}}<text x="{{$.Left}}" dx="-8" y="{{.Y}}" text-anchor="end">{{xml .Name}}</text>
<text x="{{$.Right}}" dx="-8" y="{{.Y}}" text-anchor="end">{{xml .Name}}</text>
{{end}}{{range .Bars}}<rect class="{{.Class}}" x="{{printf "%.1f" .X}}" y="{{printf "%.1f" .Y}}" width="{{printf "%.1f" .W}}" height="{{printf "%.1f" .H}}"/><text class="v" x="{{printf "%.1f" .LabelX}}" y="{{printf "%.1f" .Y}}" dy="{{printf "%.1f" .H}}" dx="3">{{xml .Label}}</text>
{{end}}</svg>
`))

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// chart lays the results out; scale is each panel's largest value, so bars compare within a
// panel.
func chart(results []result, cfg config) chartData {
	d := chartData{
		Width:    chartWidth,
		Height:   chartTop + rowHeight*len(results) + chartBottom,
		Title:    "payments-api under load",
		Subtitle: fmt.Sprintf("%d clients, %s per scenario in %d slices, race of %d; ratio = median of slice ratios to the SQL baseline", cfg.Concurrency, cfg.Duration, cfg.Slices, cfg.RaceSize),
		Left:     labelWidth,
		Right:    labelWidth*2 + panelWidth + 40,
	}
	var maxRate, maxLatency float64
	for _, r := range results {
		maxRate = math.Max(maxRate, math.Max(r.rate(), r.baselineRate))
		maxLatency = math.Max(maxLatency, millis(r.p(0.99)))
	}
	width := func(v, scale float64) float64 {
		if scale <= 0 {
			return 0
		}
		return v / scale * (panelWidth - 60) // room for the value's label
	}
	for i, r := range results {
		y := float64(chartTop + i*rowHeight)
		d.Rows = append(d.Rows, chartRow{Name: r.name, Y: y + rowHeight/2})
		add := func(x, y, v, scale, h float64, class, label string) {
			w := width(v, scale)
			d.Bars = append(d.Bars, bar{X: x, Y: y, W: w, H: h, Class: class, Label: label, LabelX: x + w})
		}
		rateLabel := fmtRate(r.rate())
		if r.baseline != "" {
			rateLabel += fmt.Sprintf(" (%.2f×)", r.ratio)
		}
		add(d.Left, y+4, r.rate(), maxRate, 16, "http", rateLabel)
		if r.baseline != "" {
			add(d.Left, y+22, r.baselineRate, maxRate, 16, "sql", fmtRate(r.baselineRate)+" "+r.baseline)
		}
		for j, q := range []struct {
			p     float64
			class string
		}{{0.50, "p50"}, {0.95, "p95"}, {0.99, "p99"}} {
			add(d.Right, y+4+float64(j)*12, millis(r.p(q.p)), maxLatency, 10, q.class, fmtMillis(r.p(q.p)))
		}
	}
	return d
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func writeChart(path string, results []result, cfg config) error {
	return writeSVG(path, chartTemplate, chart(results, cfg))
}

// writeSVG writes the chart t draws from data to path.
func writeSVG(path string, t *template.Template, data any) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := t.Execute(f, data); err != nil {
		return errors.Join(fmt.Errorf("write chart: %w", err), f.Close())
	}
	return f.Close()
}
