package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/synergy-sched/synergy/runner"
	"github.com/synergy-sched/synergy/runner/cgroupfs"
)

// Defaults for Options.
const (
	DefaultContainerMnt  = "/datadrive"
	DefaultMetricsMnt    = "/synergy"
	DefaultStatsInterval = 200 * time.Millisecond
)

// Options configure the Docker runner. Zero values take the defaults named.
type Options struct {
	// Image is the image every job runs in. It must already be present:
	// synergy never pulls.
	Image string
	// ContainerMnt is where Job.DataDir is mounted read-only
	// (DefaultContainerMnt, as in Synergy's --container-mnt).
	ContainerMnt string
	// MetricsMnt is where Job.MetricsDir is mounted read-write
	// (DefaultMetricsMnt).
	MetricsMnt string
	// ShmSizeBytes is the size of /dev/shm; 0 means 1GiB capped at half
	// the point's memory limit (see shmSizeFor).
	ShmSizeBytes int64
	// GPUs is the number of GPUs requested through a DeviceRequest
	// (docker run --gpus N); 0 none, -1 all.
	GPUs int
	// Host is the daemon address; "" means $DOCKER_HOST, else the local
	// socket (unix:///var/run/docker.sock).
	Host string
	// UseImageEntrypoint keeps the image's ENTRYPOINT and passes Job.Argv
	// as its arguments (docker run IMG ARGV...). By default Job.Argv is the
	// whole command, as for the local runner: Argv[0] replaces the
	// entrypoint.
	UseImageEntrypoint bool
	// Labels are added to every container, after the synergy.* ones.
	Labels map[string]string
	// StatsInterval is how often a handle samples its cgroup so that
	// Result.Final has counters from shortly before a natural exit
	// (DefaultStatsInterval).
	StatsInterval time.Duration
	// SysRoot and ProcRoot locate sysfs and procfs of the daemon's host
	// ("/sys", "/proc"); containers' cgroups are found through
	// <ProcRoot>/<pid>/cgroup and this process's mount table.
	SysRoot, ProcRoot string
}

func (o Options) withDefaults() (Options, error) {
	if o.ContainerMnt == "" {
		o.ContainerMnt = DefaultContainerMnt
	}
	if o.MetricsMnt == "" {
		o.MetricsMnt = DefaultMetricsMnt
	}
	if o.StatsInterval <= 0 {
		o.StatsInterval = DefaultStatsInterval
	}
	if o.SysRoot == "" {
		o.SysRoot = "/sys"
	}
	if o.ProcRoot == "" {
		o.ProcRoot = "/proc"
	}
	for _, m := range []struct{ name, v string }{{"container mount", o.ContainerMnt}, {"metrics mount", o.MetricsMnt}} {
		if !filepath.IsAbs(m.v) || filepath.Clean(m.v) == "/" {
			return o, fmt.Errorf("%s %q: want an absolute path other than /", m.name, m.v)
		}
	}
	o.ContainerMnt, o.MetricsMnt = filepath.Clean(o.ContainerMnt), filepath.Clean(o.MetricsMnt)
	if o.ContainerMnt == o.MetricsMnt || strings.HasPrefix(o.ContainerMnt+"/", o.MetricsMnt+"/") || strings.HasPrefix(o.MetricsMnt+"/", o.ContainerMnt+"/") {
		return o, fmt.Errorf("container mount %q and metrics mount %q overlap", o.ContainerMnt, o.MetricsMnt)
	}
	if o.ShmSizeBytes < 0 {
		return o, fmt.Errorf("shm size %d: negative", o.ShmSizeBytes)
	}
	if o.GPUs < -1 {
		return o, fmt.Errorf("gpus=%d: use a count, or -1 for all", o.GPUs)
	}
	return o, nil
}

// Runner runs each job in its own container on a Docker Engine.
type Runner struct {
	opts       Options
	api        dockerAPI
	images     imageAPI
	host       string
	apiVersion string
	closer     io.Closer

	userMu    sync.Mutex
	user      string // the image's USER, once userKnown
	userKnown bool
}

var _ runner.Runner = (*Runner)(nil)

// New connects to the Docker daemon, negotiating the API version down to
// the daemon's (the client speaks 1.40 and later), and fails with "cannot
// reach the Docker daemon" if it does not answer.
func New(opts Options) (*Runner, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("docker runner: %w", err)
	}
	copts := []client.Opt{client.FromEnv}
	if o.Host != "" {
		copts = append(copts, client.WithHost(o.Host))
	}
	c, err := client.New(copts...)
	if err != nil {
		return nil, fmt.Errorf("docker runner: configure the client: %w", err)
	}
	host := c.DaemonHost()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		c.Close()
		return nil, fmt.Errorf("cannot reach the Docker daemon at %s: is it running?: %w", host, err)
	}
	r := newRunner(c, c, o)
	r.host, r.apiVersion, r.closer = host, c.ClientVersion(), c
	return r, nil
}

// newRunner wires a runner to any client; o must have its defaults.
func newRunner(api dockerAPI, images imageAPI, o Options) *Runner {
	return &Runner{opts: o, api: api, images: images, host: "docker"}
}

// Name is "docker".
func (r *Runner) Name() string { return "docker" }

// Host is the daemon address in use.
func (r *Runner) Host() string { return r.host }

// APIVersion is the Engine API version negotiated with the daemon.
func (r *Runner) APIVersion() string { return r.apiVersion }

// Close releases the client's connections.
func (r *Runner) Close() error {
	if r.closer == nil {
		return nil
	}
	return r.closer.Close()
}

// errNoImage is the error of a runner with no Options.Image.
var errNoImage = errors.New("docker runner: no image given (Options.Image is empty)")

// CheckImage reports whether Options.Image is present locally, with the
// error the CLI should print when it is not.
func (r *Runner) CheckImage(ctx context.Context) error {
	if r.opts.Image == "" {
		return errNoImage
	}
	if _, err := r.images.ImageInspect(ctx, r.opts.Image); err != nil {
		return r.explain(fmt.Sprintf("inspect image %s", r.opts.Image), err)
	}
	return nil
}

// explain turns the client's errors into the messages a user can act on.
func (r *Runner) explain(doing string, err error) error {
	switch {
	case client.IsErrConnectionFailed(err):
		return fmt.Errorf("%s: cannot reach the Docker daemon at %s: is it running?: %w", doing, r.host, err)
	case cerrdefs.IsNotFound(err) && strings.Contains(strings.ToLower(err.Error()), "image"):
		return fmt.Errorf("%s: image %s not found locally: build or load it; synergy never pulls: %w", doing, r.opts.Image, err)
	}
	return fmt.Errorf("%s: %w", doing, err)
}

// Start creates and starts one container for job with its limits in force
// from the first instruction (they are part of the container's cgroup
// before its process is created).
func (r *Runner) Start(ctx context.Context, job runner.Job) (runner.Handle, error) {
	if r.opts.Image == "" {
		return nil, errNoImage
	}
	var err error
	for _, d := range []struct {
		field string
		p     *string
	}{{"DataDir", &job.DataDir}, {"MetricsDir", &job.MetricsDir}} {
		if *d.p == "" {
			continue
		}
		if *d.p, err = filepath.Abs(*d.p); err != nil {
			return nil, fmt.Errorf("job %q %s: %w", job.Name, d.field, err)
		}
		if fi, err := os.Stat(*d.p); err != nil {
			return nil, fmt.Errorf("job %q %s: %w", job.Name, d.field, err)
		} else if !fi.IsDir() {
			return nil, fmt.Errorf("job %q %s %q: not a directory", job.Name, d.field, *d.p)
		}
	}
	var online []int
	if job.Limits.CPUs > 0 && job.Limits.CPUSet == nil {
		if online, err = onlineCPUs(r.opts.SysRoot); err != nil {
			return nil, fmt.Errorf("job %q: %w", job.Name, err)
		}
	}
	var readDev string
	if job.Limits.ReadBPS > 0 {
		p := job.Limits.ReadBPSPath
		if p == "" {
			p = job.DataDir
		}
		disk, err := cgroupfs.DiskNameOf(p, r.opts.SysRoot)
		if err != nil {
			return nil, fmt.Errorf("job %q: read limit: %w", job.Name, err)
		}
		readDev = "/dev/" + disk
	}
	cfg, err := containerConfig(job, r.opts)
	if err != nil {
		return nil, err
	}
	owned, err := ownerLabels()
	if err != nil {
		return nil, fmt.Errorf("job %q: %w", job.Name, err)
	}
	for k, v := range owned {
		cfg.Labels[k] = v
	}
	r.chainImageEnv(ctx, cfg)
	hc, err := hostConfig(job, r.opts, online, readDev)
	if err != nil {
		return nil, fmt.Errorf("job %q: %w", job.Name, err)
	}

	created, err := r.api.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: hc})
	if err != nil {
		return nil, r.explain(fmt.Sprintf("job %q (%s): create container", job.Name, job.Limits), err)
	}
	if job.Stderr != nil {
		// e.g. "Your kernel does not support swap limit capabilities":
		// the point then runs without part of its limits; say so where
		// the job's own output goes.
		for _, w := range created.Warnings {
			fmt.Fprintf(job.Stderr, "synergy: docker: container %.12s: warning: %s\n", created.ID, w)
		}
	}
	h := newHandle(r, created.ID, job)
	if job.MetricsDir != "" {
		if err := r.handOver(ctx, created.ID, job.MetricsDir); err != nil {
			return nil, errors.Join(fmt.Errorf("job %q: metrics directory %s: %w", job.Name, job.MetricsDir, err), h.abandon())
		}
	}
	if err := h.begin(ctx); err != nil {
		return nil, errors.Join(err, h.abandon())
	}
	go h.run(ctx)
	return h, nil
}

// onlineCPUs reads the host's online CPU list.
func onlineCPUs(sysRoot string) ([]int, error) {
	p := filepath.Join(sysRoot, "devices", "system", "cpu", "online")
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("read online cpus: %w", err)
	}
	cpus, err := runner.ParseCPUSet(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return cpus, nil
}

// handOver gives the metrics directory to the user the container runs as
// (the image's USER, names resolved in the created container's /etc/passwd
// and /etc/group), mode 0700.
func (r *Runner) handOver(ctx context.Context, id, dir string) error {
	spec, err := r.userSpec(ctx)
	if err != nil {
		return err
	}
	u, err := resolveUser(spec, r.readFromContainer(ctx, id))
	if err != nil {
		return err
	}
	return giveMetricsDir(dir, u)
}
