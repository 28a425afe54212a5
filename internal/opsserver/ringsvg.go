package opsserver

import (
	"fmt"
	"math"
	"strings"

	"github.com/ringfire/ringfire/shard"
)

// The ring is drawn as concentric lanes of cells, one cell per slot,
// clockwise from the top: slot 0 starts the outer lane, and each lane holds
// the next slotsPerLane slots, so that every slot stays a few pixels wide
// however many the ring has.
const (
	ringSize     = 480.0 // the SVG's width and height
	ringOuter    = 232.0 // radius of the outer lane's outer edge
	ringBand     = 120.0 // from the outer lane's outer edge to the inner lane's inner edge
	laneGap      = 5.0
	raise        = 4.0 // how much further out the cells this replica holds reach
	slotsPerLane = 256
	maxLanes     = 8
	cellGap      = 0.9 // pixels between neighbouring cells of a lane
)

// cell is one slot as drawn.
type cell struct {
	Slot  int
	Path  string // the cell, in its holder's colour (white when unowned)
	Fill  string
	Class string // held, handover or unowned; with "here" when this replica holds it
	Title string
	// To is the inner part of a cell being handed over or unowned, in the
	// colour of the member it is assigned to; empty otherwise.
	To, ToFill string
	// Dot marks a slot whose holder changed within shard.MovedWithin.
	Dot        bool
	DotX, DotY float64
}

// lanes returns how many lanes slots take and how many slots each holds.
func lanes(slots int) (n, per int) {
	n = min(max(1, (slots+slotsPerLane-1)/slotsPerLane), maxLanes)
	return n, (slots + n - 1) / n
}

// ringCells draws every slot of rep. Without the holders (not read yet),
// there is nothing to draw.
func ringCells(rep statusReport, colours map[string]string) []cell {
	st := rep.Status
	if len(st.Holders) != st.Slots || st.Slots == 0 {
		return nil
	}
	n, per := lanes(st.Slots)
	thick := (ringBand - laneGap*float64(n-1)) / float64(n)
	moved := map[int]bool{}
	for _, s := range st.Moved {
		moved[s] = true
	}
	cells := make([]cell, st.Slots)
	for s := range st.Slots {
		holder, assignee := st.Holders[s], assigneeOf(st, s)
		here := holder != "" && holder == st.ID
		lane, pos := s/per, s%per
		rOut := ringOuter - float64(lane)*(thick+laneGap)
		rIn := rOut - thick
		if !here {
			rOut -= raise // the cells held here stand out
		}
		a0 := 2 * math.Pi * float64(pos) / float64(per)
		a1 := 2 * math.Pi * float64(pos+1) / float64(per)
		c := cell{Slot: s, Fill: colours[holder], Class: "held"}
		switch {
		case holder == "":
			c.Fill, c.Class = "#fff0f0", "unowned"
			c.Title = fmt.Sprintf("slot %d: unowned, assigned to %s", s, orNone(assignee))
		case assignee != holder:
			c.Class = "handover"
			c.Title = fmt.Sprintf("slot %d: held by %s, being handed over to %s", s, holder, orNone(assignee))
		default:
			c.Title = fmt.Sprintf("slot %d: held by %s", s, holder)
		}
		c.Path = sector(rIn, rOut, a0, a1)
		if c.Class != "held" && assignee != "" {
			c.To, c.ToFill = sector(rIn, rIn+thick*0.45, a0, a1), colours[assignee]
		}
		if here {
			c.Class += " here"
		}
		if moved[s] {
			c.Dot = true
			mid, r := (a0+a1)/2, rOut-thick*0.3
			c.DotX, c.DotY = round1(r*math.Sin(mid)), round1(-r*math.Cos(mid))
			c.Title += " (moved in the last seconds)"
		}
		cells[s] = c
	}
	return cells
}

func assigneeOf(st shard.Status, s int) string {
	if s < len(st.Assignment) {
		return st.Assignment[s]
	}
	return ""
}

func orNone(id string) string {
	if id == "" {
		return "no member"
	}
	return id
}

// sector is the SVG path of the part of an annulus between radii rIn and
// rOut and angles a0 and a1 (clockwise from the top, centre at 0,0), less
// half a cellGap on each side.
func sector(rIn, rOut, a0, a1 float64) string {
	a1 = min(a1, a0+2*math.Pi-1e-3) // an arc back to its start draws nothing
	gOut, gIn := cellGap/2/rOut, cellGap/2/rIn
	if a1-a0 <= 2*max(gOut, gIn) {
		gOut, gIn = 0, 0
	}
	pt := func(r, a float64) string {
		return fmt.Sprintf("%.1f %.1f", r*math.Sin(a), -r*math.Cos(a))
	}
	var b strings.Builder
	large := 0
	if a1-a0 > math.Pi {
		large = 1
	}
	fmt.Fprintf(&b, "M%sA%.1f %.1f 0 %d 1 %s", pt(rOut, a0+gOut), rOut, rOut, large, pt(rOut, a1-gOut))
	fmt.Fprintf(&b, "L%sA%.1f %.1f 0 %d 0 %sZ", pt(rIn, a1-gIn), rIn, rIn, large, pt(rIn, a0+gIn))
	return b.String()
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }
