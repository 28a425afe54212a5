package main

import (
	"fmt"
	"strings"
)

// A schema is one node of a CRD's openAPIV3Schema, decoded from YAML as generic maps so that
// an edit changes it in place.
type schema = map[string]any

// A rule is one entry of x-kubernetes-validations: a CEL expression over self (and oldSelf on an
// update) that must hold,
// the message the API server returns when it does not, and optionally the field (relative to
// self) that the error names, and a CEL expression for a message naming the culprit (the API
// server falls back to message if it fails).
type rule struct {
	Rule              string `json:"rule"`
	Message           string `json:"message"`
	MessageExpression string `json:"messageExpression,omitempty"`
	FieldPath         string `json:"fieldPath,omitempty"`
	// OptionalOldSelf makes oldSelf an optional, so that a rule that reads it (a transition
	// rule) runs on create too, where oldSelf has no value.
	OptionalOldSelf bool `json:"optionalOldSelf,omitempty"`
}

// An edit changes the schema node at a path: it adds validation rules, sets keywords
// (default, maxItems, maxLength, enum), adds required properties, or drops descriptions.
//
// A path names properties separated by dots; a trailing [] steps into a list's items. "" is
// the root of the object, "spec.tasks[].policies[]" is one policy of one task.
type edit struct {
	at    string
	rules []rule
	set   map[string]any
	// values sets keywords on the schema of a map's values (additionalProperties).
	values   map[string]any
	required []string
	// terse drops the descriptions at and below the node: embedded Kubernetes types (a pod
	// template) are documented by `kubectl explain pod`, and their descriptions would make the
	// CRD too large for `kubectl apply`.
	terse bool
}

// apply makes the edit to the object schema root. It fails when the path does not exist or a
// keyword it sets is already set to something else, so a change in the upstream types shows up
// as a failed `make crds` rather than as a silently missing rule.
func (e edit) apply(root schema) error {
	node, err := lookup(root, e.at)
	if err != nil {
		return err
	}
	for key, value := range e.set {
		if old, ok := node[key]; ok && fmt.Sprint(old) != fmt.Sprint(value) {
			return fmt.Errorf("%s: %s is already %v upstream, not %v", e.at, key, old, value)
		}
		node[key] = value
	}
	if len(e.values) > 0 {
		values, ok := node["additionalProperties"].(schema)
		if !ok {
			return fmt.Errorf("%s: not a map", e.at)
		}
		for key, value := range e.values {
			values[key] = value
		}
	}
	for _, name := range e.required {
		if _, ok := properties(node)[name]; !ok {
			return fmt.Errorf("%s: cannot require %q: no such property", e.at, name)
		}
		node["required"] = appendMissing(node["required"], name)
	}
	for _, r := range e.rules {
		node["x-kubernetes-validations"] = append(asList(node["x-kubernetes-validations"]), r)
	}
	if e.terse {
		dropDescriptions(node)
	}
	return nil
}

// lookup returns the schema node at path below root.
func lookup(root schema, path string) (schema, error) {
	node := root
	if path == "" {
		return node, nil
	}
	for _, step := range strings.Split(path, ".") {
		name, isList := strings.CutSuffix(step, "[]")
		child, ok := properties(node)[name].(schema)
		if !ok {
			return nil, fmt.Errorf("schema path %q: no property %q", path, name)
		}
		node = child
		if isList {
			items, ok := node["items"].(schema)
			if !ok {
				return nil, fmt.Errorf("schema path %q: %q is not a list", path, name)
			}
			node = items
		}
	}
	return node, nil
}

// dropDescriptions removes the descriptions of node and of every schema below it.
func dropDescriptions(node schema) {
	delete(node, "description")
	for _, child := range properties(node) {
		if child, ok := child.(schema); ok {
			dropDescriptions(child)
		}
	}
	for _, key := range []string{"items", "additionalProperties", "not"} {
		if child, ok := node[key].(schema); ok {
			dropDescriptions(child)
		}
	}
	for _, key := range []string{"allOf", "anyOf", "oneOf"} {
		for _, child := range asList(node[key]) {
			if child, ok := child.(schema); ok {
				dropDescriptions(child)
			}
		}
	}
}

func properties(node schema) schema {
	props, _ := node["properties"].(schema)
	return props
}

func asList(v any) []any {
	list, _ := v.([]any)
	return list
}

func appendMissing(list any, name string) []any {
	names := asList(list)
	for _, n := range names {
		if n == name {
			return names
		}
	}
	return append(names, name)
}
