package opsserver

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// page is what a person reads off the status page, taken from its markup.
type page struct {
	legend      map[string]string // member id → its swatch's colour
	thisMember  string            // the legend's highlighted line
	held        map[string]string // member id → its held count as shown
	cellsByFill map[string]int    // fill colour → slot cells of it
	cells       int
	handover    int            // cells marked as being handed over
	unowned     int            // cells marked unowned
	toFills     map[string]int // fill colour → inner marks of the assignee
	moved       int            // moved marks
	movedByFill map[string]int // fill colour → moved marks on cells of it
	here        int            // cells marked as held by this replica
	moving      string         // the number (or "settled") at the ring's centre
	waiting     string         // the not-ready banner's text
	controllers map[string][]string
	phases      map[string]string // phase → Jobs shown
}

// readPage parses the status page as a browser would.
func readPage(t testing.TB, body []byte) page {
	t.Helper()
	root, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("status page is not HTML: %v", err)
	}
	p := page{legend: map[string]string{}, held: map[string]string{}, cellsByFill: map[string]int{},
		toFills: map[string]int{}, movedByFill: map[string]int{}, controllers: map[string][]string{}, phases: map[string]string{}}
	lastFill := "" // of the last slot cell: a moved mark follows its cell
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			classes := strings.Fields(attr(n, "class"))
			has := func(c string) bool { return contains(classes, c) }
			switch {
			case n.Data == "path" && attr(n, "data-slot") != "":
				p.cells++
				lastFill = attr(n, "fill")
				p.cellsByFill[lastFill]++
				if has("handover") {
					p.handover++
				}
				if has("unowned") {
					p.unowned++
				}
				if has("here") {
					p.here++
				}
			case n.Data == "path" && has("to"):
				p.toFills[attr(n, "fill")]++
			case n.Data == "circle" && has("moved"):
				p.moved++
				p.movedByFill[lastFill]++
			case attr(n, "id") == "moving":
				p.moving = text(n)
			case attr(n, "id") == "waiting":
				p.waiting = text(n)
			case n.Data == "tr" && has("member"):
				id := attr(n, "data-member")
				p.legend[id] = attr(n, "data-colour")
				if has("this") {
					p.thisMember = id
				}
				if cells := cellTexts(n); len(cells) > 1 {
					p.held[id] = cells[1]
				}
			case n.Data == "tr" && attr(n, "data-controller") != "":
				p.controllers[attr(n, "data-controller")] = cellTexts(n)
			case n.Data == "tr" && attr(n, "data-phase") != "":
				if cells := cellTexts(n); len(cells) > 1 {
					p.phases[attr(n, "data-phase")] = cells[1]
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	return p
}

func attr(n *html.Node, name string) string {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// cellTexts is the text of each td of a table row.
func cellTexts(tr *html.Node) []string {
	var out []string
	for c := tr.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.Data == "td" {
			out = append(out, text(c))
		}
	}
	return out
}
