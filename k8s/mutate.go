package k8s

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/synergy-sched/synergy/scheduler"
)

// Applied is what the webhook did to a pod, kept as JSON in the
// AnnotationApplied annotation.
type Applied struct {
	Profile string `json:"profile"`
	// PodGPUs is the pod's nvidia.com/gpu; JobGPUs the whole job's (the
	// pod group's, for a gang), on which the profile's demand is computed.
	PodGPUs int `json:"pod_gpus"`
	JobGPUs int `json:"job_gpus"`
	// CPUs and MemBytes are what the pod now requests, and is limited to,
	// over its GPU containers.
	CPUs     float64 `json:"cpus"`
	MemBytes float64 `json:"mem_bytes"`
	// FairCPUs and FairMemBytes are the GPU-proportional share of the
	// pod's GPUs on this cluster.
	FairCPUs     float64 `json:"fair_cpus"`
	FairMemBytes float64 `json:"fair_mem_bytes"`
	// Speedup is the profile's predicted throughput at this allocation
	// relative to the GPU-proportional share.
	Speedup float64 `json:"speedup"`
	// NodeShape is the cluster's per-node size the demand was fitted to
	// (Synergy's per-server size: totals over GPU nodes, divided by their
	// number).
	NodeShape scheduler.Resources `json:"node_shape"`
	Changes   []Change            `json:"changes"`
	Warnings  []string            `json:"warnings,omitempty"`
}

// Change is one field the webhook set.
type Change struct {
	Container string `json:"container"`
	Field     string `json:"field"` // "requests.cpu", "limits.memory", ...
	From      string `json:"from"`  // "" when it was not set
	To        string `json:"to"`
}

// PatchOp is one JSON Patch (RFC 6902) operation.
type PatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// PatchFor computes what the webhook sets on pod (annotations, set with
// the AnnotationApplied record and the time of admission, besides): the ideal demand of job
// (scheduler.IdealDemand on shape s: the smallest allocation reaching 95%
// of the profile's best throughput, capped at one node) scaled to the pod's
// share of the job's GPUs, as CPU and memory requests and equal limits
// (the profile was measured under hard limits) on the containers that ask
// for nvidia.com/gpu, split among them by their GPUs. CPUs are rounded up
// to millicores and memory up to whole bytes. Other containers and other
// resources are left as they are.
func PatchFor(pod *corev1.Pod, ref string, job *scheduler.Job, s scheduler.Shape, annotations map[string]string) (Applied, []PatchOp, error) {
	podGPUs := DemandOf(pod).GPUs
	if podGPUs < 1 {
		return Applied{}, nil, fmt.Errorf("profile %q: the pod asks for no %s", ref, ResourceGPU)
	}
	d := scheduler.IdealDemand(job, s)
	frac := float64(podGPUs) / float64(job.GPUs)
	fair := s.Fair.Times(podGPUs)
	a := Applied{
		Profile: ref, PodGPUs: podGPUs, JobGPUs: job.GPUs,
		FairCPUs: fair.CPUs, FairMemBytes: fair.MemBytes,
		Speedup: d.Speedup, NodeShape: s.PerServer, Changes: []Change{},
		Warnings: job.Warnings,
	}
	cpus, mem := d.Ideal.CPUs*frac, d.Ideal.MemBytes*frac
	var ops []PatchOp
	for i, c := range pod.Spec.Containers {
		g := containerGPUs(c)
		if g == 0 {
			continue
		}
		share := float64(g) / float64(podGPUs)
		cq, mq := cpuQuantity(cpus*share), memQuantity(mem*share)
		res := *c.Resources.DeepCopy()
		if res.Requests == nil {
			res.Requests = corev1.ResourceList{}
		}
		if res.Limits == nil {
			res.Limits = corev1.ResourceList{}
		}
		for _, set := range []struct {
			list  corev1.ResourceList
			field string
			name  corev1.ResourceName
			q     resource.Quantity
		}{
			{res.Requests, "requests.cpu", corev1.ResourceCPU, cq},
			{res.Requests, "requests.memory", corev1.ResourceMemory, mq},
			{res.Limits, "limits.cpu", corev1.ResourceCPU, cq},
			{res.Limits, "limits.memory", corev1.ResourceMemory, mq},
		} {
			from := ""
			if old, ok := set.list[set.name]; ok {
				if old.Cmp(set.q) == 0 {
					continue
				}
				from = old.String()
			}
			set.list[set.name] = set.q
			a.Changes = append(a.Changes, Change{Container: c.Name, Field: set.field, From: from, To: set.q.String()})
		}
		a.CPUs += float64(cq.MilliValue()) / 1000
		a.MemBytes += float64(mq.Value())
		ops = append(ops, PatchOp{Op: "add", Path: fmt.Sprintf("/spec/containers/%d/resources", i), Value: res})
	}
	blob, err := json.Marshal(a)
	if err != nil {
		return Applied{}, nil, fmt.Errorf("encode %s: %w", AnnotationApplied, err)
	}
	set := map[string]string{AnnotationApplied: string(blob)}
	for k, v := range annotations {
		set[k] = v
	}
	ops = append(ops, annotationOps(pod, set, []string{AnnotationError})...)
	return a, ops, nil
}

// containerGPUs is a container's nvidia.com/gpu (requests, else limits).
func containerGPUs(c corev1.Container) int {
	if q, ok := c.Resources.Requests[ResourceGPU]; ok {
		return int(q.Value())
	}
	if q, ok := c.Resources.Limits[ResourceGPU]; ok {
		return int(q.Value())
	}
	return 0
}

// annotationOps sets the annotations in set and removes those in remove
// that are there.
func annotationOps(pod *corev1.Pod, set map[string]string, remove []string) []PatchOp {
	if pod.Annotations == nil {
		return []PatchOp{{Op: "add", Path: "/metadata/annotations", Value: set}}
	}
	var ops []PatchOp
	for _, k := range slices.Sorted(maps.Keys(set)) {
		ops = append(ops, PatchOp{Op: "add", Path: "/metadata/annotations/" + escapePointer(k), Value: set[k]})
	}
	for _, k := range remove {
		if _, ok := pod.Annotations[k]; ok {
			ops = append(ops, PatchOp{Op: "remove", Path: "/metadata/annotations/" + escapePointer(k)})
		}
	}
	return ops
}

// escapePointer escapes a JSON Pointer token (RFC 6901).
func escapePointer(s string) string { return strings.NewReplacer("~", "~0", "/", "~1").Replace(s) }

// groupSize reads the pod group's size from the pod's annotations: 0 for a
// pod in no group.
func groupSize(pod *corev1.Pod) (group string, size int, err error) {
	group = pod.Annotations[AnnotationPodGroup]
	if group == "" {
		return "", 0, nil
	}
	v, ok := pod.Annotations[AnnotationPodGroupSize]
	if !ok {
		return "", 0, fmt.Errorf("%s=%q without %s", AnnotationPodGroup, group, AnnotationPodGroupSize)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return "", 0, fmt.Errorf("%s=%q: not a positive integer", AnnotationPodGroupSize, v)
	}
	return group, n, nil
}
