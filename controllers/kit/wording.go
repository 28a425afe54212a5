package kit

import "strings"

// Wording is a message with every number in it replaced by '#': two
// messages of the same wording tell the same story with other amounts
// ("cpu idle 15200m" then "cpu idle 14400m"). Controllers that tell a
// condition in an Event tell it again only when its wording changes, not
// with every amount that moves.
func Wording(msg string) string {
	var b strings.Builder
	inNumber := false
	for _, r := range msg {
		if r >= '0' && r <= '9' || inNumber && r == '.' {
			if !inNumber {
				b.WriteByte('#')
			}
			inNumber = true
			continue
		}
		inNumber = false
		b.WriteRune(r)
	}
	return b.String()
}
