package shard

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/transferlab/transferlab/experiment"
	"github.com/transferlab/transferlab/k8s"
)

// KubeManifest is the Kubernetes manifest (k8s.Manifest: a ConfigMap, the
// Indexed Job of spec.Shards shards and the merge Job) that runs the config
// at cfgPath split over spec.Shards shards and merges them. The config is
// checked as run checks it (the files it names included) and refused when
// its server is one each shard would launch (CheckServer); spec's Config
// and ConfigName come from it, Name defaults to k8s.DefaultName of its name,
// and without a DataClaim the trace is inlined, found as run finds it
// (experiment.Config.TracePath). The config is trusted input: it runs code.
func KubeManifest(cfgPath string, spec k8s.Spec) ([]byte, error) {
	cfg, raw, err := experiment.Load(cfgPath, experiment.CheckFiles())
	if err != nil {
		return nil, err
	}
	if err := CheckServer(cfg, spec.Shards); err != nil {
		return nil, fmt.Errorf("config %s: %w", cfgPath, err)
	}
	spec.Config, spec.ConfigName = raw, filepath.Base(cfgPath)
	if spec.Name == "" {
		spec.Name = k8s.DefaultName(cfg.Name, spec.ConfigName)
	}
	if spec.DataClaim == "" {
		spec.TracePath = cfg.Trace.Path
		if spec.Trace, err = os.ReadFile(cfg.TracePath()); err != nil {
			return nil, fmt.Errorf("trace.path: %w", err)
		}
	}
	return k8s.Manifest(spec)
}
