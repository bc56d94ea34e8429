// Package k8s is synergy's Kubernetes bridge, and the only package that
// imports client-go and k8s.io/*. It has two parts, both ordinary
// Kubernetes components. The mutating admission webhook (Webhook) sets a
// training pod's CPU and memory requests and limits from the profile its
// annotation names (a profile JSON from `synergy profile`, kept in a
// ConfigMap or a directory, or a model of Synergy's zoo), on the shape of
// the cluster's GPU nodes, and records what it changed in an annotation.
// The scheduler (Scheduler) is a second scheduler for pods with
// `schedulerName: synergy`: it watches pods and nodes through informers,
// turns the GPU nodes into a scheduler.Cluster and the pods already bound
// into used resources, and asks scheduler.PlaceQueue — what `synergy
// schedule` answers with — to place the pending pods as one FIFO queue
// (TUNE by default); it binds what was placed through the pods/binding
// subresource, and writes why a pod waits as an event and a PodScheduled
// condition. Pods of a pod group are placed all or none. Leader election on
// a Lease keeps two replicas from binding at once.
package k8s
