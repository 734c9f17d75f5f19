package k8s

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/yaml"
)

func testSpec() Spec {
	return Spec{
		Name: "transferlab-fleet", Namespace: "bench", Image: "registry.example/transferlab:1.0",
		Shards: 3, StartAt: time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC),
		ConfigName: "fleet.yaml", Config: []byte("name: fleet\n"), TracePath: "traces/t.csv", Trace: []byte("a,b\n1,2\n"),
		OutClaim: "results-rwx", ExtraRunArgs: []string{"--clock-ref", "ntp.bench:123"}, CPU: "2", MergeWait: time.Hour,
	}
}

// decodeStrict decodes every document of a manifest with the API
// machinery's strict universal deserializer (unknown or duplicate fields
// are errors) and, again, with sigs.k8s.io/yaml's strict unmarshalling into
// the typed objects.
func decodeStrict(t *testing.T, manifest []byte) []runtime.Object {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := batchv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	dec := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	var objs []runtime.Object
	for i, doc := range bytes.Split(manifest, []byte("\n---\n")) {
		obj, gvk, err := dec.Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("document %d does not decode strictly: %v\n%s", i, err, doc)
		}
		var typed any
		switch gvk.Kind {
		case "ConfigMap":
			typed = &corev1.ConfigMap{}
		case "Job":
			typed = &batchv1.Job{}
		default:
			t.Fatalf("document %d: unexpected kind %s", i, gvk)
		}
		if err := yaml.UnmarshalStrict(doc, typed); err != nil {
			t.Fatalf("document %d: yaml.UnmarshalStrict: %v", i, err)
		}
		objs = append(objs, obj)
	}
	return objs
}

func TestManifestDecodesStrictly(t *testing.T) {
	t.Parallel()
	m, err := Manifest(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeStrict(t, m)
	if len(objs) != 3 {
		t.Fatalf("%d objects, want ConfigMap, shards Job, merge Job", len(objs))
	}
	cm := objs[0].(*corev1.ConfigMap)
	if cm.Data["config"] != "name: fleet\n" || string(cm.BinaryData["trace"]) != "a,b\n1,2\n" {
		t.Errorf("ConfigMap holds %q and %q", cm.Data["config"], cm.BinaryData["trace"])
	}
	shards := objs[1].(*batchv1.Job)
	s := shards.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion || *s.Completions != 3 || *s.Parallelism != 3 {
		t.Fatalf("shards Job: completion mode %v, completions %v, parallelism %v; want Indexed, 3, 3", s.CompletionMode, *s.Completions, *s.Parallelism)
	}
	c := s.Template.Spec.Containers[0]
	args := strings.Join(c.Args, " ")
	for _, want := range []string{
		"run /etc/transferlab/fleet.yaml", "--shard $(JOB_COMPLETION_INDEX)/3", "--start-at 2026-12-01T22:00:00Z",
		"--out /out/transferlab-fleet/shard-$(JOB_COMPLETION_INDEX)", "--clock-ref ntp.bench:123",
	} {
		if !strings.Contains(args, want) {
			t.Errorf("shard args %q lack %q", args, want)
		}
	}
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "JOB_COMPLETION_INDEX" && e.ValueFrom != nil && strings.Contains(e.ValueFrom.FieldRef.FieldPath, batchv1.JobCompletionIndexAnnotation)
	}) {
		t.Errorf("shard env %+v does not define JOB_COMPLETION_INDEX from the completion-index annotation", c.Env)
	}
	if c.Resources.Limits.Cpu().String() != "2" || s.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("shard cpu limit %s, restart policy %s", c.Resources.Limits.Cpu(), s.Template.Spec.RestartPolicy)
	}
	// One failed shard fails the Job (backoffLimit 0), so the Job controller
	// terminates the others; each gets time to write its results and
	// shard.json marked incomplete, where the merge's wait stops.
	if s.BackoffLimit == nil || *s.BackoffLimit != 0 {
		t.Errorf("shards Job backoffLimit %v, want 0", s.BackoffLimit)
	}
	if g := s.Template.Spec.TerminationGracePeriodSeconds; g == nil || *g < 60 {
		t.Errorf("shard pods' termination grace %v s: a terminated shard needs time to write its incomplete mark", g)
	}
	vols := s.Template.Spec.Volumes
	if vols[0].ConfigMap == nil || vols[0].ConfigMap.Name != cm.Name || vols[0].ConfigMap.Items[1].Path != "traces/t.csv" {
		t.Errorf("data volume %+v does not mount the ConfigMap's trace at the config's path", vols[0])
	}
	if vols[1].PersistentVolumeClaim == nil || vols[1].PersistentVolumeClaim.ClaimName != "results-rwx" {
		t.Errorf("out volume %+v", vols[1])
	}
	merge := objs[2].(*batchv1.Job)
	margs := merge.Spec.Template.Spec.Containers[0].Args
	// The run's folders sit in a folder of its name: runs of other names
	// can share the claim.
	want := []string{"merge", "--wait", "1h0m0s", "/out/transferlab-fleet/merged", "/out/transferlab-fleet/shard-0", "/out/transferlab-fleet/shard-1", "/out/transferlab-fleet/shard-2"}
	if !slices.Equal(margs, want) {
		t.Errorf("merge args %q, want %q", margs, want)
	}
	for _, o := range []*batchv1.Job{shards, merge} {
		if o.Namespace != "bench" || o.Labels["app.kubernetes.io/instance"] != "transferlab-fleet" {
			t.Errorf("%s: namespace %q labels %v", o.Name, o.Namespace, o.Labels)
		}
	}
}

// TestStrictDecodingRefusesUnknownFields: the check above can fail.
func TestStrictDecodingRefusesUnknownFields(t *testing.T) {
	t.Parallel()
	m, err := Manifest(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Replace(m, []byte("completionMode: Indexed"), []byte("completionMode: Indexed\n  completionsMode: Indexed"), 1)
	scheme := runtime.NewScheme()
	_ = batchv1.AddToScheme(scheme)
	_ = corev1.AddToScheme(scheme)
	dec := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	docs := bytes.Split(bad, []byte("\n---\n"))
	if _, _, err := dec.Decode(docs[1], nil, nil); err == nil || !strings.Contains(err.Error(), "completionsMode") {
		t.Fatalf("a misspelt field decoded: %v", err)
	}
}

func TestDataClaimAndBadSpecs(t *testing.T) {
	t.Parallel()
	s := testSpec()
	s.DataClaim, s.Trace, s.TracePath = "bench-data", nil, ""
	m, err := Manifest(s)
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeStrict(t, m)
	if len(objs) != 2 {
		t.Fatalf("with a data claim: %d objects, want the two Jobs only", len(objs))
	}
	if v := objs[0].(*batchv1.Job).Spec.Template.Spec.Volumes[0]; v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "bench-data" || !v.PersistentVolumeClaim.ReadOnly {
		t.Errorf("data volume %+v, want claim bench-data read-only", v)
	}
	for _, tc := range []struct {
		edit func(*Spec)
		want string
	}{
		{func(s *Spec) { s.Name = "Bad_Name" }, "name:"},
		{func(s *Spec) { s.Shards = 0 }, "shards:"},
		{func(s *Spec) { s.Image = "" }, "image:"},
		{func(s *Spec) { s.OutClaim = "" }, "out-claim:"},
		{func(s *Spec) { s.TracePath = "../t.csv" }, "trace.path:"},
		{func(s *Spec) { s.Trace = make([]byte, 2<<20) }, "1 MiB"},
		{func(s *Spec) { s.CPU = "two" }, "cpu:"},
		{func(s *Spec) { s.StartAt = time.Time{} }, "start-at:"},
	} {
		s := testSpec()
		tc.edit(&s)
		if _, err := Manifest(s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one naming %q", err, tc.want)
		}
	}
}

// TestDefaultName: the config's name: field, or its file name without the
// extension when that is blank, as a DNS-1123 label fragment of at most 30
// characters, after "transferlab-".
func TestDefaultName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"quickstart.yaml":                   "transferlab-quickstart",
		"H200 Llama_study.v2.yaml":          "transferlab-h200-llama-study-v2",
		"___.yaml":                          "transferlab-run",
		strings.Repeat("a", 29) + "-b.yaml": "transferlab-" + strings.Repeat("a", 29),
	} {
		if got := DefaultName("", in); got != want {
			t.Errorf("DefaultName(\"\", %q) = %q, want %q", in, got, want)
		}
	}
	if got := DefaultName("My Study_v2", "other.yaml"); got != "transferlab-my-study-v2" {
		t.Errorf("DefaultName(name:) = %q, want the name: field's label", got)
	}
}
