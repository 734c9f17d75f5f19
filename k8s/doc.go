// Package k8s builds the Kubernetes manifest of a run split over shards: an
// Indexed Job whose pods each replay one shard (`transferlab run --shard
// $(JOB_COMPLETION_INDEX)/N --start-at T`), a Job that waits for every shard
// and merges them (`transferlab merge --wait`), and the ConfigMap holding the
// config and its trace. The objects are the API's own Go types
// (k8s.io/api), so every field name is checked when this package compiles,
// and Manifest's output decodes strictly with the API machinery.
//
// It knows nothing of experiments or measurement: it is given the config's
// bytes and file names. Only the `k8s` sub-command imports it.
package k8s
