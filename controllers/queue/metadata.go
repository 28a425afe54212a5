package queue

import (
	"encoding/json"

	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// Marks is what the controller keeps on a queue outside its status.
type Marks struct {
	// HasChildren, NotOpen and AtMaxDepth set or remove HasChildrenLabel, NotOpenLabel and
	// AtMaxDepthLabel.
	HasChildren, NotOpen, AtMaxDepth bool
	// ClosedByParent, when not empty, is the value ClosedByParentAnnotation must have;
	// empty leaves the annotation as it is.
	ClosedByParent string
}

// MarksPatch is the JSON merge patch that brings queue to marks, and spec.parent to the root
// queue when it is empty (as Volcano's controller writes it), or nil when nothing changes. The
// patch carries the queue's resourceVersion, so that it fails on a stale view.
func MarksPatch(queue *scheduling.Queue, marks Marks) []byte {
	metadata := map[string]any{}
	labels := map[string]any{}
	for key, want := range map[string]bool{
		HasChildrenLabel: marks.HasChildren, NotOpenLabel: marks.NotOpen, AtMaxDepthLabel: marks.AtMaxDepth,
	} {
		value, labelled := queue.Labels[key]
		switch {
		case want && value != "true":
			labels[key] = "true"
		case !want && labelled:
			labels[key] = nil
		}
	}
	if len(labels) > 0 {
		metadata["labels"] = labels
	}
	if marks.ClosedByParent != "" && queue.Annotations[ClosedByParentAnnotation] != marks.ClosedByParent {
		metadata["annotations"] = map[string]any{ClosedByParentAnnotation: marks.ClosedByParent}
	}
	patch := map[string]any{}
	if queue.Name != RootQueue && queue.Spec.Parent == "" {
		patch["spec"] = map[string]any{"parent": RootQueue}
	}
	if len(metadata) == 0 && len(patch) == 0 {
		return nil
	}
	metadata["resourceVersion"] = queue.ResourceVersion
	patch["metadata"] = metadata
	data, err := json.Marshal(patch)
	if err != nil {
		return nil // maps of strings always marshal
	}
	return data
}
