package opsserver

import (
	"fmt"
	"html/template"
	"io"
	"math"

	"github.com/ringfire/ringfire/shard"
)

// The status page draws the ring: one dot per slot around a circle, filled
// where this replica holds the slot.
var statusPage = template.Must(template.New("status").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>ringfire {{.ID}}</title>
<meta http-equiv="refresh" content="2">
<style>body{font-family:sans-serif;margin:2em}td,th{padding:2px 10px;text-align:left}</style></head>
<body><h1>ringfire replica {{.ID}}</h1>
<table><tr><th>slots</th><td>{{.Slots}}</td></tr>
<tr><th>held here</th><td>{{len .Held}}</td></tr>
<tr><th>assigned here</th><td>{{.Assigned}}</td></tr>
<tr><th>orphaned in the ring</th><td>{{.Orphaned}}</td></tr>
<tr><th>members</th><td>{{range .Members}}{{.}} {{end}}</td></tr>
<tr><th>member view revision</th><td>{{.Revision}}</td></tr></table>
<svg width="420" height="420" viewBox="-210 -210 420 420">
<circle r="190" fill="none" stroke="#ccc"/>
{{range .Dots}}<circle cx="{{.X}}" cy="{{.Y}}" r="{{.R}}" fill="{{.Fill}}"/>{{end}}
</svg></body></html>`))

type dot struct {
	X, Y, R float64
	Fill    string
}

func renderStatus(w io.Writer, st shard.Status) {
	held := make(map[int]bool, len(st.Held))
	for _, s := range st.Held {
		held[s] = true
	}
	dots := make([]dot, 0, st.Slots)
	r := math.Max(0.6, math.Min(4, 600/float64(max(st.Slots, 1))))
	for s := range st.Slots {
		a := 2*math.Pi*float64(s)/float64(st.Slots) - math.Pi/2
		fill := "#ddd"
		if held[s] {
			fill = "#d9480f"
		}
		dots = append(dots, dot{X: 190 * math.Cos(a), Y: 190 * math.Sin(a), R: r, Fill: fill})
	}
	data := struct {
		shard.Status
		Dots []dot
	}{st, dots}
	if err := statusPage.Execute(w, data); err != nil {
		fmt.Fprintf(w, "status page: %v", err)
	}
}
