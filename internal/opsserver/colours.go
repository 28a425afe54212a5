package opsserver

import (
	"hash/fnv"
	"slices"
)

// palette holds the member colours: distinct from each other, from the red
// that marks unowned slots and from the black of the marks, and dark enough
// for white text. A member's colour comes from a hash of its id, so it is
// the same on every replica's page and from one view to the next.
var palette = []string{
	"#4e79a7", // blue
	"#f28e2b", // orange
	"#59a14f", // green
	"#b07aa1", // purple
	"#76b7b2", // teal
	"#edc948", // yellow
	"#9c755f", // brown
	"#ff9da7", // pink
	"#6b6ecf", // periwinkle
	"#b5cf6b", // lime
}

// memberColours gives each id a palette colour: its hash's, or when an id
// earlier in order took that one, the next free colour after it. Past
// len(palette) ids, colours repeat.
func memberColours(ids []string) map[string]string {
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	taken := make([]bool, len(palette))
	out := make(map[string]string, len(sorted))
	for i, id := range sorted {
		h := fnv.New32a()
		h.Write([]byte(id))
		c := int(h.Sum32() % uint32(len(palette)))
		if i < len(palette) {
			for taken[c] {
				c = (c + 1) % len(palette)
			}
			taken[c] = true
		}
		out[id] = palette[c]
	}
	return out
}
