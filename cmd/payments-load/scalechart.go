package main

import (
	"fmt"
	"math"
	"text/template"
)

// The scale chart is one small panel per operation: p50 and p99 latency (y, from 0) against
// the preloaded rows (x, one evenly spaced point per size). Each panel has its own scale, so
// a flat line reads as flat whatever the operation costs. Plain SVG, as chart.go.

const (
	scaleCols     = 4
	scalePanelW   = 220
	scalePanelH   = 170
	scaleMarginX  = 40 // room for the y labels
	scaleTop      = 64
	scalePlotTop  = 22 // below the panel's title
	scalePlotBase = 40 // above the panel's x labels
)

type scalePoint struct {
	X, Y  float64
	Label string
}

type scaleLine struct {
	Class  string
	Points []scalePoint
}

type scalePanel struct {
	Title            string
	Y                float64 // the panel's top
	Left, Right, Top float64 // the plot's box
	Bottom           float64
	Max              string // the y axis's top value
	Lines            []scaleLine
	Ticks            []scalePoint // x labels
}

type scaleChartData struct {
	Width, Height   int
	Title, Subtitle string
	Panels          []scalePanel
}

var scaleChartTemplate = template.Must(template.New("scale").Funcs(template.FuncMap{"xml": xmlEscape}).Parse(
	`<svg xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}" font-family="sans-serif" font-size="11">
<style>.p50{stroke:#2f855a;fill:#2f855a}.p99{stroke:#c53030;fill:#c53030}polyline{fill:none;stroke-width:2}text.v{font-size:9px;stroke:none}.axis{stroke:#a0aec0;stroke-width:1}</style>
<rect width="100%" height="100%" fill="#fff"/>
<text x="10" y="20" font-size="15" font-weight="bold">{{xml .Title}}</text>
<text x="10" y="38" fill="#4a5568">{{xml .Subtitle}}</text>
<text x="10" y="54"><tspan fill="#2f855a">■ p50</tspan> <tspan fill="#c53030">■ p99</tspan> latency, ms, against preloaded payments</text>
{{range .Panels}}<g>
<text x="{{printf "%.1f" .Left}}" y="{{printf "%.1f" .Y}}" dy="12" font-weight="bold">{{xml .Title}}</text>
<line class="axis" x1="{{printf "%.1f" .Left}}" y1="{{printf "%.1f" .Top}}" x2="{{printf "%.1f" .Left}}" y2="{{printf "%.1f" .Bottom}}"/>
<line class="axis" x1="{{printf "%.1f" .Left}}" y1="{{printf "%.1f" .Bottom}}" x2="{{printf "%.1f" .Right}}" y2="{{printf "%.1f" .Bottom}}"/>
<text x="{{printf "%.1f" .Left}}" dx="-4" y="{{printf "%.1f" .Top}}" dy="4" text-anchor="end" fill="#4a5568">{{.Max}}</text>
<text x="{{printf "%.1f" .Left}}" dx="-4" y="{{printf "%.1f" .Bottom}}" text-anchor="end" fill="#4a5568">0</text>
{{range .Ticks}}<text x="{{printf "%.1f" .X}}" y="{{printf "%.1f" .Y}}" text-anchor="middle" fill="#4a5568">{{.Label}}</text>
{{end}}{{range .Lines}}{{$class := .Class}}<polyline class="{{$class}}" points="{{range .Points}}{{printf "%.1f,%.1f " .X .Y}}{{end}}"/>
{{range .Points}}<circle class="{{$class}}" cx="{{printf "%.1f" .X}}" cy="{{printf "%.1f" .Y}}" r="3"/><text class="v {{$class}}" x="{{printf "%.1f" .X}}" y="{{printf "%.1f" .Y}}" dy="-5" text-anchor="middle">{{.Label}}</text>
{{end}}{{end}}</g>
{{end}}</svg>
`))

// scaleChart lays out results, which hold each operation's sizes in order, operation after
// operation (as runScale returns them).
func scaleChart(results []scaleResult, cfg config) scaleChartData {
	sizes := len(cfg.Scale)
	ops := len(results) / sizes
	rows := (ops + scaleCols - 1) / scaleCols
	d := scaleChartData{
		Width:  scaleCols * (scalePanelW + scaleMarginX),
		Height: scaleTop + rows*scalePanelH,
		Title:  "payments-api latency against the data it holds",
		Subtitle: fmt.Sprintf("%d clients, %s per operation and size in %d slices alternating the sizes; skewed: 9 payments in 10 in the measured account",
			cfg.Concurrency, cfg.Duration, cfg.Slices),
	}
	for o := range ops {
		row := results[o*sizes : (o+1)*sizes]
		x0 := float64((o%scaleCols)*(scalePanelW+scaleMarginX) + scaleMarginX)
		y0 := float64(scaleTop + (o/scaleCols)*scalePanelH)
		p := scalePanel{Title: row[0].op, Y: y0, Left: x0, Right: x0 + scalePanelW - 20,
			Top: y0 + scalePlotTop, Bottom: y0 + scalePanelH - scalePlotBase}
		var top float64
		for _, r := range row {
			top = math.Max(top, millis(percentile(r.latencies, 0.99)))
		}
		top = niceCeil(top)
		p.Max = fmtAxis(top)
		xAt := func(i int) float64 {
			return p.Left + 20 + float64(i)*(p.Right-p.Left-40)/math.Max(float64(sizes-1), 1)
		}
		for _, q := range []struct {
			class string
			p     float64
		}{{"p50", 0.50}, {"p99", 0.99}} {
			line := scaleLine{Class: q.class}
			for i, r := range row {
				v := millis(percentile(r.latencies, q.p))
				y := p.Bottom
				if top > 0 {
					y -= v / top * (p.Bottom - p.Top)
				}
				line.Points = append(line.Points, scalePoint{X: xAt(i), Y: y, Label: fmtAxis(v)})
			}
			p.Lines = append(p.Lines, line)
		}
		for i, r := range row {
			p.Ticks = append(p.Ticks, scalePoint{X: xAt(i), Y: p.Bottom + 14, Label: fmtRows(r.rows)})
		}
		d.Panels = append(d.Panels, p)
	}
	return d
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten, so an axis ends on a round value.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 0
	}
	pow := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5} {
		if v <= m*pow {
			return m * pow
		}
	}
	return 10 * pow
}

func fmtAxis(ms float64) string {
	if ms >= 10 {
		return fmt.Sprintf("%.0f", ms)
	}
	return fmt.Sprintf("%.2g", ms)
}

func writeScaleChart(path string, results []scaleResult, cfg config) error {
	return writeSVG(path, scaleChartTemplate, scaleChart(results, cfg))
}
