package k8s

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// Paths inside every pod.
const (
	configMount = "/etc/transferlab"
	outMount    = "/out"
	// MergedDir is the merged run's folder in the run's folder (Spec.Name)
	// on the output volume.
	MergedDir = "merged"
)

// shardGrace is how long a terminated shard pod has to write its results
// and shard.json (marked incomplete) before it is killed: a merge waiting
// for the shards stops at that mark (the default 30 s can be too short to
// write a large shard's records' results and reports).
const shardGrace = 2 * time.Minute

// maxConfigMapBytes is the API server's limit on one ConfigMap's data (1 MiB).
const maxConfigMapBytes = 1 << 20

// Spec is what the manifest is built from.
type Spec struct {
	// Name prefixes every object (a DNS-1123 label of ≤ 50 characters).
	Name      string
	Namespace string
	Image     string
	// Shards is N: the Indexed Job's completions and parallelism.
	Shards int
	// StartAt is the shards' shared start (--start-at).
	StartAt time.Time
	// ConfigName is the config's file name; Config its bytes.
	ConfigName string
	Config     []byte
	// TracePath is the trace's path as the config names it (relative to the
	// config, no ".."); Trace its bytes. Both empty when DataClaim is set.
	TracePath string
	Trace     []byte
	// DataClaim, when set, is a PersistentVolumeClaim holding ConfigName and
	// its trace at the paths the config names, mounted read-only instead of
	// a ConfigMap (for traces over the ConfigMap limit of 1 MiB).
	DataClaim string
	// OutClaim is the PersistentVolumeClaim (ReadWriteMany: every shard and
	// the merge mount it) the shards write <Name>/shard-<i>/ into and the
	// merge writes <Name>/merged/ into: runs of other names share a claim
	// without meeting each other's folders. An object-store bucket is reached
	// through a CSI driver that mounts it as such a claim.
	OutClaim string
	// ExtraRunArgs are appended to every shard's `transferlab run` (e.g.
	// --clock-ref, --cell-gap).
	ExtraRunArgs []string
	// CPU is each shard's CPU request and limit (e.g. "2"; "" leaves it unset).
	CPU string
	// MergeWait bounds how long the merge waits for the shards to finish.
	MergeWait time.Duration
}

func (s Spec) validate() error {
	var errs []error
	bad := func(field, format string, a ...any) { errs = append(errs, fmt.Errorf(field+": "+format, a...)) }
	if msgs := validation.IsDNS1123Label(s.Name); len(msgs) > 0 || len(s.Name) > 50 {
		bad("name", "%q must be a DNS-1123 label of at most 50 characters (%s)", s.Name, strings.Join(msgs, "; "))
	}
	if s.Namespace != "" {
		if msgs := validation.IsDNS1123Label(s.Namespace); len(msgs) > 0 {
			bad("namespace", "%q: %s", s.Namespace, strings.Join(msgs, "; "))
		}
	}
	if s.Image == "" {
		bad("image", "required")
	}
	if s.Shards < 1 {
		bad("shards", "%d: want ≥ 1", s.Shards)
	}
	if s.StartAt.IsZero() {
		bad("start-at", "required")
	}
	if s.OutClaim == "" {
		bad("out-claim", "required: a ReadWriteMany PersistentVolumeClaim every shard and the merge mount")
	}
	if s.ConfigName == "" || strings.Contains(s.ConfigName, "/") {
		bad("config", "file name %q: want a bare file name", s.ConfigName)
	}
	if s.DataClaim == "" {
		if s.TracePath == "" || path.IsAbs(s.TracePath) || strings.Contains(s.TracePath, "..") {
			bad("trace.path", "%q: in a ConfigMap the trace must sit at a path relative to the config, without \"..\" (or use --data-claim)", s.TracePath)
		}
		if n := len(s.Config) + len(s.Trace); n > maxConfigMapBytes {
			bad("trace", "config and trace are %d bytes, over a ConfigMap's 1 MiB: put them on a volume (--data-claim)", n)
		}
	}
	if s.CPU != "" {
		if _, err := resource.ParseQuantity(s.CPU); err != nil {
			bad("cpu", "%q: %v", s.CPU, err)
		}
	}
	if s.MergeWait <= 0 {
		bad("merge-wait", "%s: want > 0", s.MergeWait)
	}
	return errors.Join(errs...)
}

// Objects builds the manifest's objects: the ConfigMap (unless DataClaim is
// set), the shards' Indexed Job and the merge Job.
func Objects(s Spec) ([]any, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	labels := map[string]string{"app.kubernetes.io/name": "transferlab", "app.kubernetes.io/instance": s.Name}
	meta := func(suffix, component string) metav1.ObjectMeta {
		l := map[string]string{"app.kubernetes.io/component": component}
		for k, v := range labels {
			l[k] = v
		}
		return metav1.ObjectMeta{Name: s.Name + "-" + suffix, Namespace: s.Namespace, Labels: l}
	}
	var objs []any
	dataVolume := corev1.Volume{Name: "data"}
	if s.DataClaim != "" {
		dataVolume.VolumeSource = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: s.DataClaim, ReadOnly: true}}
	} else {
		cm := &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: meta("config", "config"),
			Data:       map[string]string{"config": string(s.Config)},
			BinaryData: map[string][]byte{"trace": s.Trace},
		}
		objs = append(objs, cm)
		dataVolume.VolumeSource = corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name},
			Items:                []corev1.KeyToPath{{Key: "config", Path: s.ConfigName}, {Key: "trace", Path: s.TracePath}},
		}}
	}
	outVolume := corev1.Volume{Name: "out", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: s.OutClaim}}}
	mounts := []corev1.VolumeMount{{Name: "data", MountPath: configMount, ReadOnly: true}, {Name: "out", MountPath: outMount}}
	configPath := path.Join(configMount, s.ConfigName)

	runDir := path.Join(outMount, s.Name)
	startAt := s.StartAt.UTC().Format(time.RFC3339)
	args := append([]string{"run", configPath,
		"--shard", fmt.Sprintf("$(JOB_COMPLETION_INDEX)/%d", s.Shards),
		"--start-at", startAt,
		"--out", runDir + "/shard-$(JOB_COMPLETION_INDEX)",
		"--quiet"}, s.ExtraRunArgs...)
	shardC := corev1.Container{
		Name:    "shard",
		Image:   s.Image,
		Command: []string{"transferlab"},
		Args:    args,
		// The Job controller sets JOB_COMPLETION_INDEX too; declaring it
		// from the annotation makes $(JOB_COMPLETION_INDEX) in args expand
		// on any cluster version that runs Indexed Jobs.
		Env: []corev1.EnvVar{{Name: "JOB_COMPLETION_INDEX", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + batchv1.JobCompletionIndexAnnotation + "']"},
		}}},
		VolumeMounts: mounts,
	}
	if s.CPU != "" {
		q := resource.MustParse(s.CPU)
		shardC.Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: q},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: q},
		}
	}
	grace := int64(shardGrace / time.Second)
	shards := newJob(meta("shards", "shard"), s.Shards, corev1.PodSpec{
		Containers:                    []corev1.Container{shardC},
		Volumes:                       []corev1.Volume{dataVolume, outVolume},
		TerminationGracePeriodSeconds: &grace,
	})
	indexed := batchv1.IndexedCompletion
	shards.Spec.CompletionMode = &indexed
	// One shard per node where the cluster allows it: shards on one node
	// share its cores and network.
	shards.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 100,
			PodAffinityTerm: corev1.PodAffinityTerm{
				LabelSelector: &metav1.LabelSelector{MatchLabels: shards.Labels},
				TopologyKey:   "kubernetes.io/hostname",
			},
		}},
	}}

	mergeArgs := []string{"merge", "--wait", s.MergeWait.String(), path.Join(runDir, MergedDir)}
	for i := range s.Shards {
		mergeArgs = append(mergeArgs, fmt.Sprintf("%s/shard-%d", runDir, i))
	}
	merge := newJob(meta("merge", "merge"), 1, corev1.PodSpec{
		Containers: []corev1.Container{{
			Name:         "merge",
			Image:        s.Image,
			Command:      []string{"transferlab"},
			Args:         mergeArgs,
			VolumeMounts: mounts,
		}},
		Volumes: []corev1.Volume{dataVolume, outVolume},
	})
	objs = append(objs, shards, merge)
	return objs, nil
}

// newJob is a Job of n pods run at once (completions = parallelism = n)
// from pod, labelled as meta. Its pods are never restarted nor retried
// (backoffLimit 0): a shard started again would start late against the
// shared timetable and find its folder in use, so a failed shard stays failed
// and the merge names it. With backoffLimit 0 one failed pod also fails the
// Job, and the Job controller then terminates its other pods (SIGTERM): a
// merge needs every shard, so their remaining measurement would be wasted;
// each writes its results marked incomplete and shard.json's ended_early
// within shardGrace, and the merge's wait stops there (shard.WaitFinished)
// instead of lasting --merge-wait.
func newJob(meta metav1.ObjectMeta, n int, pod corev1.PodSpec) *batchv1.Job {
	count, zero := int32(n), int32(0)
	pod.RestartPolicy = corev1.RestartPolicyNever
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: meta,
		Spec: batchv1.JobSpec{
			Completions:  &count,
			Parallelism:  &count,
			BackoffLimit: &zero,
			Template:     corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: meta.Labels}, Spec: pod},
		},
	}
}

// Manifest is Objects as YAML documents separated by "---", for kubectl apply -f.
func Manifest(s Spec) ([]byte, error) {
	objs, err := Objects(s)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# transferlab run split over %d shards, starting at %s; merged into %s on claim %s.\n",
		s.Shards, s.StartAt.UTC().Format(time.RFC3339), path.Join(outMount, s.Name, MergedDir), s.OutClaim)
	for i, o := range objs {
		y, err := yaml.Marshal(o)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	return b.Bytes(), nil
}

var notDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// DefaultName is Spec.Name when none is given: "transferlab-" and the
// config's name: field (name), or when that is blank its file name
// (configFile) without the extension, as a DNS-1123 label fragment (lower
// case, [a-z0-9-], ≤ 30 characters; "run" when nothing is left).
func DefaultName(name, configFile string) string {
	s := name
	if strings.TrimSpace(s) == "" {
		s = strings.TrimSuffix(configFile, path.Ext(configFile))
	}
	s = strings.Trim(notDNS.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(s) > 30 {
		s = strings.Trim(s[:30], "-")
	}
	if s == "" {
		s = "run"
	}
	return "transferlab-" + s
}
