//go:build race

package cache

// raceEnabled: the race detector makes the heaviest tests some ten times slower; they run
// smaller under it.
const raceEnabled = true
