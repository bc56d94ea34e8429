package k8s

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	corev1listers "k8s.io/client-go/listers/core/v1"

	"github.com/synergy-sched/synergy/internal/safefile"
	"github.com/synergy-sched/synergy/models/zoo"
	"github.com/synergy-sched/synergy/scheduler"
	"github.com/synergy-sched/synergy/sensitivity"
)

// ProfileSource reads profile JSON (the output of `synergy profile`) by
// name.
type ProfileSource interface {
	// Profile returns the named profile's JSON; an error says where it
	// was looked for.
	Profile(name string) ([]byte, error)
	// String says where profiles come from ("ConfigMap ns/name").
	String() string
}

// ZooPrefix marks an annotation value naming a model of Synergy's zoo
// (zoo:res18) instead of a stored profile.
const ZooPrefix = "zoo:"

// profileName is what a stored profile may be called: a ConfigMap key
// (and a file name without slashes).
var profileName = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)

// ErrNoSource is returned for a stored profile when no ProfileSource is
// configured.
var ErrNoSource = errors.New("no profile source configured (neither a profiles ConfigMap nor a profiles directory); only zoo:MODEL profiles can be used")

// JobFor builds the scheduler's job for a profile reference (a stored
// profile's name or zoo:MODEL) and a GPU count on a cluster of shape s,
// exactly as `synergy schedule PROFILE:gpus=N` and `zoo:MODEL:gpus=N` do:
// a stored profile (strictly read, its missing cells predicted) through
// scheduler.JobFromProfile with its GPU count replaced, a zoo model through the zoo's tables. Errors name the profile
// and what is wrong with it.
func JobFor(id int, ref string, src ProfileSource, gpus int, s scheduler.Shape) (*scheduler.Job, error) {
	if gpus < 1 {
		return nil, fmt.Errorf("profile %q: the pod asks for no %s: a profile gives CPU and memory per GPU", ref, ResourceGPU)
	}
	var j *scheduler.Job
	if name, ok := strings.CutPrefix(ref, ZooPrefix); ok {
		var err error
		if j, err = scheduler.ZooJob(id, name, 0, 1, gpus, nil); err != nil {
			return nil, fmt.Errorf("profile %q: %w (zoo models: %s)", ref, err, strings.Join(zoo.Names(), ", "))
		}
	} else {
		if !profileName.MatchString(ref) {
			return nil, fmt.Errorf("profile %q: not a profile name (letters, digits, '-', '_', '.') nor %sMODEL", ref, ZooPrefix)
		}
		if src == nil {
			return nil, fmt.Errorf("profile %q: %w", ref, ErrNoSource)
		}
		data, err := src.Profile(ref)
		if err != nil {
			return nil, fmt.Errorf("profile %q: %w", ref, err)
		}
		p, err := sensitivity.Decode(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("profile %q in %s: %w", ref, src, err)
		}
		// A profile cut short has unmeasured cells: predict them, as
		// synergy schedule does (sensitivity.LoadFilled).
		if !p.Complete() {
			if err := sensitivity.Fill(p); err != nil {
				return nil, fmt.Errorf("profile %q in %s: %w", ref, src, err)
			}
		}
		if j, err = scheduler.JobFromProfile(id, p, s); err != nil {
			return nil, fmt.Errorf("profile %q in %s: %w", ref, src, err)
		}
		// The matrix is per GPU: the pod's GPU count scales the demand,
		// not the sensitivity.
		j.GPUs = gpus
	}
	if err := j.Validate(); err != nil {
		return nil, fmt.Errorf("profile %q: %w", ref, err)
	}
	return j, nil
}

// DirSource reads profile NAME from DIR/NAME.json, or DIR/NAME.
type DirSource struct{ Dir string }

// Profile implements ProfileSource.
func (d DirSource) Profile(name string) ([]byte, error) {
	if !profileName.MatchString(name) {
		return nil, fmt.Errorf("%q is not a profile name", name)
	}
	for _, f := range []string{name + ".json", name} {
		data, err := safefile.ReadFile(filepath.Join(d.Dir, f), sensitivity.MaxProfileBytes, "profile")
		if err == nil {
			return data, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("no %s.json in %s", name, d.Dir)
}

func (d DirSource) String() string { return "directory " + d.Dir }

// ConfigMapSource reads profile NAME from key NAME (or NAME.json) of one
// ConfigMap, through an informer's lister so that lookups cost no API
// call.
type ConfigMapSource struct {
	Namespace, Name string
	Lister          corev1listers.ConfigMapLister
}

// Profile implements ProfileSource.
func (c *ConfigMapSource) Profile(name string) ([]byte, error) {
	cm, err := c.Lister.ConfigMaps(c.Namespace).Get(c.Name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c, err)
	}
	for _, k := range []string{name, name + ".json"} {
		if v, ok := cm.Data[k]; ok {
			return []byte(v), nil
		}
		if v, ok := cm.BinaryData[k]; ok {
			return v, nil
		}
	}
	return nil, fmt.Errorf("no key %q in %s", name, c)
}

func (c *ConfigMapSource) String() string { return "ConfigMap " + c.Namespace + "/" + c.Name }
