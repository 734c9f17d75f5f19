package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/transferlab/transferlab/k8s"
	"github.com/transferlab/transferlab/shard"
)

// newK8sCmd builds `transferlab k8s CONFIG --shards N --image IMAGE`.
func newK8sCmd() *cobra.Command {
	var (
		spec      k8s.Spec
		startAt   string
		startIn   time.Duration
		clockRef  string
		cellGap   time.Duration
		mergeWait time.Duration
	)
	cmd := &cobra.Command{
		Use:   "k8s CONFIG.yaml --shards N --image IMAGE --out-claim CLAIM",
		Short: "Print a Kubernetes manifest that runs CONFIG split over N shards (an Indexed Job) and merges them",
		Long: `k8s prints, for kubectl apply -f -, a ConfigMap with the config and its
trace, an Indexed Job of N pods (completionMode Indexed, parallelism and
completions N) each running
  transferlab run CONFIG --shard $(JOB_COMPLETION_INDEX)/N --start-at T --out /out/NAME/shard-<i>
and a merge Job that waits until every shard has finished and runs
  transferlab merge /out/NAME/merged /out/NAME/shard-0 ... /out/NAME/shard-<N-1>
on a ReadWriteMany volume (--out-claim; a bucket mounted through a CSI driver
works too), NAME being --name: runs of other names share the volume. The server must be one every pod reaches (server.kind endpoint).
The config runs code (it is trusted input): apply only configs you would run.
Built from k8s.io/api types; not run on a cluster here (see README).`,
		Args: namedArgs("CONFIG.yaml"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			switch {
			case startAt != "" && cmd.Flags().Changed("start-in"):
				return fmt.Errorf("--start-at and --start-in: give one")
			case startAt != "":
				if spec.StartAt, err = time.Parse(time.RFC3339, startAt); err != nil {
					return fmt.Errorf("--start-at %q: want RFC 3339: %w", startAt, err)
				}
			default:
				spec.StartAt = time.Now().UTC().Add(startIn).Truncate(time.Second)
			}
			if clockRef != "" {
				spec.ExtraRunArgs = append(spec.ExtraRunArgs, "--clock-ref", clockRef)
			}
			if cellGap > 0 {
				spec.ExtraRunArgs = append(spec.ExtraRunArgs, "--cell-gap", cellGap.String())
			}
			spec.MergeWait = mergeWait
			out, err := shard.KubeManifest(args[0], spec)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	f := cmd.Flags()
	f.IntVar(&spec.Shards, "shards", 0, "number of shards N (pods replaying 1/N of every schedule each)")
	f.StringVar(&spec.Image, "image", "", "container image with transferlab on its PATH")
	f.StringVar(&spec.OutClaim, "out-claim", "", "ReadWriteMany PersistentVolumeClaim for the shards' and the merged output")
	f.StringVar(&spec.DataClaim, "data-claim", "", "PersistentVolumeClaim holding the config and trace at their paths (instead of a ConfigMap; for traces over 1 MiB)")
	f.StringVar(&spec.Name, "name", "", "prefix of the objects' names (default: transferlab- and the config's name field, or its file name without the extension when that is blank, lower-cased to a-z, 0-9 and -, at most 30 characters)")
	f.StringVar(&spec.Namespace, "namespace", "", "namespace of the objects (default: kubectl's)")
	f.StringVar(&spec.CPU, "cpu", "", "CPU request and limit of each shard pod (e.g. 2)")
	f.StringVar(&startAt, "start-at", "", "shared start of the shards (RFC 3339); default now + --start-in")
	f.DurationVar(&startIn, "start-in", 5*time.Minute, "start the shards this long after the manifest is printed (time to apply it and pull the image)")
	f.StringVar(&clockRef, "clock-ref", "", "NTP server (host:port) every shard measures its clock offset against")
	f.DurationVar(&cellGap, "cell-gap", 0, "passed to run --cell-gap (default: request.timeout)")
	f.DurationVar(&mergeWait, "merge-wait", 24*time.Hour, "how long the merge Job waits for every shard to finish (it stops at once when a shard ended early: the shards' Job fails at its first failed pod and ends the others, which mark themselves incomplete; and within a minute of a shard killed outright, whose shard.json heartbeat stops)")
	_ = cmd.MarkFlagRequired("shards")
	_ = cmd.MarkFlagRequired("image")
	_ = cmd.MarkFlagRequired("out-claim")
	return cmd
}
