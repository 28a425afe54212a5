package job

import "github.com/ringfire/ringfire/controllers/kit"

// told remembers, per Job key, the PodGroupPending story recorded last.
type told struct {
	kit.Keyed[string]
}

// change records story as the Job's and reports whether it is a new one to
// tell; an empty story (nothing pending) is never told, and lets the next
// story be told even if it is the last one again.
func (t *told) change(key, story string) (news bool) {
	t.Update(key, func(last string, _ bool) (string, bool) {
		news = story != "" && last != story
		return story, story != ""
	})
	return news
}
