package stack

import (
	"bytes"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A refused create's Status names the object whether the API server answered in JSON (the
// Volcano kinds) or protobuf (the built-in kinds, by default).
func TestStatusMessageJSONAndProtobuf(t *testing.T) {
	st := &metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonAlreadyExists, Code: 409,
		Message: `pods "j-task-0" already exists`}
	for _, mediaType := range []string{runtime.ContentTypeJSON, runtime.ContentTypeProtobuf} {
		info, ok := runtime.SerializerInfoForMediaType(statusCodecs.SupportedMediaTypes(), mediaType)
		if !ok {
			t.Fatalf("no serializer for %s", mediaType)
		}
		var buf bytes.Buffer
		enc := statusCodecs.EncoderForVersion(info.Serializer, schema.GroupVersion{Version: "v1"})
		if err := enc.Encode(st.DeepCopy(), &buf); err != nil {
			t.Fatalf("%s: %v", mediaType, err)
		}
		if got := statusMessage(buf.Bytes()); got != st.Message {
			t.Errorf("%s: message %q, want %q", mediaType, got, st.Message)
		}
	}
	if got := statusMessage([]byte("not a status")); got != "" {
		t.Errorf("garbage gave %q", got)
	}
}
