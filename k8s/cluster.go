package k8s

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/synergy-sched/synergy/scheduler"
)

// Names of the annotations and resources the bridge reads and writes.
const (
	// Prefix is the domain of synergy's annotations.
	Prefix = "synergy-sched.github.io/"
	// AnnotationProfile names the pod's profile: a key of the profiles
	// ConfigMap or file in the profiles directory, or zoo:MODEL.
	AnnotationProfile = Prefix + "profile"
	// AnnotationApplied is written by the webhook: what it set and why
	// (JSON, Applied).
	AnnotationApplied = Prefix + "applied"
	// AnnotationError is written by the webhook when it could not apply
	// the profile; the pod is admitted as it was.
	AnnotationError = Prefix + "profile-error"
	// AnnotationAdmitted is written by the webhook: when it admitted the
	// pod (RFC 3339 with nanoseconds). The scheduler's queue is in this
	// order, finer than creationTimestamp's whole seconds.
	AnnotationAdmitted = Prefix + "admitted"
	// AnnotationPodGroup names the gang a pod belongs to; the pods of one
	// group are bound all or none.
	AnnotationPodGroup = Prefix + "pod-group"
	// AnnotationPodGroupSize is the number of pods in the group.
	AnnotationPodGroupSize = Prefix + "pod-group-size"
	// ResourceGPU is the extended resource of NVIDIA's device plugin.
	ResourceGPU corev1.ResourceName = "nvidia.com/gpu"
	// DefaultSchedulerName is the schedulerName pods ask for.
	DefaultSchedulerName = "synergy"
)

// PodDemand is what a pod asks for, summed over its containers the way
// kube-scheduler counts it: the sum of the containers' requests, or the
// largest init container's when that is larger, plus the pod overhead.
// GPUs are read from requests, or from limits where a container sets
// only limits (extended resources default their requests to limits).
type PodDemand struct {
	GPUs     int
	CPUs     float64 // cores (millicores / 1000)
	MemBytes int64
}

// DemandOf returns pod's demand.
func DemandOf(pod *corev1.Pod) PodDemand {
	one := func(r corev1.ResourceRequirements) PodDemand {
		d := PodDemand{}
		if q, ok := r.Requests[corev1.ResourceCPU]; ok {
			d.CPUs = float64(q.MilliValue()) / 1000
		}
		if q, ok := r.Requests[corev1.ResourceMemory]; ok {
			d.MemBytes = q.Value()
		}
		if q, ok := r.Requests[ResourceGPU]; ok {
			d.GPUs = int(q.Value())
		} else if q, ok := r.Limits[ResourceGPU]; ok {
			d.GPUs = int(q.Value())
		}
		return d
	}
	var sum PodDemand
	for _, c := range pod.Spec.Containers {
		d := one(c.Resources)
		sum.GPUs += d.GPUs
		sum.CPUs += d.CPUs
		sum.MemBytes += d.MemBytes
	}
	for _, c := range pod.Spec.InitContainers {
		d := one(c.Resources)
		sum.GPUs = max(sum.GPUs, d.GPUs)
		sum.CPUs = max(sum.CPUs, d.CPUs)
		sum.MemBytes = max(sum.MemBytes, d.MemBytes)
	}
	if q, ok := pod.Spec.Overhead[corev1.ResourceCPU]; ok {
		sum.CPUs += float64(q.MilliValue()) / 1000
	}
	if q, ok := pod.Spec.Overhead[corev1.ResourceMemory]; ok {
		sum.MemBytes += q.Value()
	}
	return sum
}

// terminal reports whether the pod no longer holds its node's resources.
func terminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// nodeResources is a node's allocatable (or, where allocatable is not
// set, capacity) GPUs, CPUs and memory.
func nodeResources(n *corev1.Node) (gpus int, cpus float64, mem int64) {
	get := func(name corev1.ResourceName) (resource.Quantity, bool) {
		if q, ok := n.Status.Allocatable[name]; ok {
			return q, true
		}
		q, ok := n.Status.Capacity[name]
		return q, ok
	}
	if q, ok := get(ResourceGPU); ok {
		gpus = int(q.Value())
	}
	if q, ok := get(corev1.ResourceCPU); ok {
		cpus = float64(q.MilliValue()) / 1000
	}
	if q, ok := get(corev1.ResourceMemory); ok {
		mem = q.Value()
	}
	return gpus, cpus, mem
}

// Excluded is a node left out of the cluster, and why.
type Excluded struct {
	Node   string
	Reason string
}

// ClusterFromNodes turns nodes into the scheduler's cluster: one server per
// node with at least one allocatable GPU, CPUs and memory, that is not
// cordoned and carries no NoSchedule or NoExecute taint other than
// nvidia.com/gpu (GPU pods tolerate that one by convention). Servers are
// ordered by node name, numbers within names compared as numbers
// (node-2 before node-10), because the strategies fill GPUs in server
// order: the same nodes always make the same cluster. Every node left out
// is returned with its reason.
func ClusterFromNodes(name string, nodes []*corev1.Node) (scheduler.Cluster, []Excluded) {
	sorted := slices.Clone(nodes)
	slices.SortFunc(sorted, func(a, b *corev1.Node) int { return NaturalCompare(a.Name, b.Name) })
	c := scheduler.Cluster{Name: name}
	var out []Excluded
	for _, n := range sorted {
		if why := unusable(n); why != "" {
			out = append(out, Excluded{Node: n.Name, Reason: why})
			continue
		}
		gpus, cpus, mem := nodeResources(n)
		switch {
		case gpus < 1:
			out = append(out, Excluded{Node: n.Name, Reason: "no allocatable " + string(ResourceGPU)})
			continue
		case cpus <= 0:
			out = append(out, Excluded{Node: n.Name, Reason: "no allocatable cpu"})
			continue
		case mem <= 0:
			out = append(out, Excluded{Node: n.Name, Reason: "no allocatable memory"})
			continue
		}
		c.Servers = append(c.Servers, scheduler.Server{Name: n.Name, GPUs: gpus, CPUs: cpus, MemBytes: mem})
	}
	return c, out
}

func unusable(n *corev1.Node) string {
	if n.Spec.Unschedulable {
		return "cordoned (spec.unschedulable)"
	}
	for _, t := range n.Spec.Taints {
		if (t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute) && t.Key != string(ResourceGPU) {
			return fmt.Sprintf("taint %s:%s", t.Key, t.Effect)
		}
	}
	return ""
}

// UsedOn sums the demand of the non-terminal pods bound to the cluster's
// servers, by server in cluster order, as scheduler.PlaceQueue (and
// `synergy schedule --used`) reads it; servers nothing is bound to are left
// out. Pods bound by any scheduler count.
func UsedOn(c *scheduler.Cluster, pods []*corev1.Pod) []scheduler.Usage {
	index := map[string]int{}
	for i, s := range c.Servers {
		index[s.Name] = i
	}
	sums := make([]scheduler.Usage, len(c.Servers))
	seen := make([]bool, len(c.Servers))
	for _, p := range pods {
		i, ok := index[p.Spec.NodeName]
		if !ok || terminal(p) {
			continue
		}
		d := DemandOf(p)
		sums[i].GPUs += d.GPUs
		sums[i].CPUs += d.CPUs
		sums[i].MemBytes += float64(d.MemBytes)
		seen[i] = true
	}
	var out []scheduler.Usage
	for i, u := range sums {
		if seen[i] {
			u.Server = c.Servers[i].Name
			out = append(out, u)
		}
	}
	return out
}

// NaturalCompare orders strings with runs of digits compared as numbers:
// "node-2" < "node-10". Equal numbers with different zero padding fall
// back to the plain comparison so the order is total.
func NaturalCompare(a, b string) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ca, cb := a[i], b[j]
		if isDigit(ca) && isDigit(cb) {
			si := i
			for i < len(a) && isDigit(a[i]) {
				i++
			}
			sj := j
			for j < len(b) && isDigit(b[j]) {
				j++
			}
			na := strings.TrimLeft(a[si:i], "0")
			nb := strings.TrimLeft(b[sj:j], "0")
			if len(na) != len(nb) {
				return cmpInt(len(na), len(nb))
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			continue
		}
		if ca != cb {
			return cmpInt(int(ca), int(cb))
		}
		i++
		j++
	}
	if c := cmpInt(len(a)-i, len(b)-j); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cpuQuantity is cores as a Kubernetes quantity in millicores, rounded up
// ("6", "1500m").
func cpuQuantity(cpus float64) resource.Quantity {
	return *resource.NewMilliQuantity(int64(math.Ceil(cpus*1000-1e-6)), resource.DecimalSI)
}

// memQuantity is bytes as a Kubernetes quantity, rounded up to a whole
// byte: binary suffixes for whole MiB ("64Gi", "1536Mi"), decimal ones
// otherwise ("20G", "62500000k"), as a person would write them.
func memQuantity(b float64) resource.Quantity {
	n := int64(math.Ceil(b - 1e-6))
	if n%(1<<20) == 0 {
		return *resource.NewQuantity(n, resource.BinarySI)
	}
	return *resource.NewQuantity(n, resource.DecimalSI)
}

// gbText is decimal gigabytes, as synergy's tables count memory.
func gbText(b float64) string { return strconv.FormatFloat(b/1e9, 'f', 2, 64) + " GB" }
