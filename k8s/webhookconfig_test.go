package k8s

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The webhook's policy, as the deploy manifests (deploy/kubernetes,
// deploy/demo.sh) carry it: the tests install it in a real API server and
// check the manifests against it.
const (
	// webhookTimeoutSeconds bounds the API server's wait for the webhook.
	webhookTimeoutSeconds = 5
	// webhookName names the webhook within its configuration.
	webhookName = "pods.synergy-sched.github.io"
)

// webhookConfiguration is the MutatingWebhookConfiguration for a webhook
// at cc. Its policy, and why:
//   - failurePolicy Ignore: when the webhook is down or slow, pods are
//     created with the requests they came with, never refused: a training
//     pod that starts with its own requests is better than one that is not
//     created, and no other pod ever depends on this webhook.
//   - timeoutSeconds 5: the webhook answers from informer caches in
//     milliseconds; 5 s bounds what a hung webhook adds to a pod's
//     creation (the API's default is 10 s).
//   - matchConditions: the API server calls the webhook only for pods
//     that carry the profile annotation, so pods it does not own never
//     wait on it at all.
//   - namespaceSelector (nsSelector): the deploy manifests leave out
//     kube-system and the webhook's own namespace, so a broken webhook
//     cannot stand in the way of the control plane or of its own repair.
//   - sideEffects NoneOnDryRun: the only side effect is an event for a
//     malformed profile, skipped on dry runs.
//   - reinvocationPolicy Never: it sets requests once, at creation.
func webhookConfiguration(name string, cc admissionregistrationv1.WebhookClientConfig, nsSelector *metav1.LabelSelector) *admissionregistrationv1.MutatingWebhookConfiguration {
	ignore := admissionregistrationv1.Ignore
	side := admissionregistrationv1.SideEffectClassNoneOnDryRun
	never := admissionregistrationv1.NeverReinvocationPolicy
	scope := admissionregistrationv1.NamespacedScope
	timeout := int32(webhookTimeoutSeconds)
	if nsSelector == nil {
		nsSelector = &metav1.LabelSelector{}
	}
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    webhookName,
			ClientConfig:            cc,
			AdmissionReviewVersions: []string{"v1"},
			FailurePolicy:           &ignore,
			TimeoutSeconds:          &timeout,
			SideEffects:             &side,
			ReinvocationPolicy:      &never,
			NamespaceSelector:       nsSelector,
			ObjectSelector:          &metav1.LabelSelector{},
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name:       "has-synergy-profile",
				Expression: fmt.Sprintf("has(object.metadata.annotations) && '%s' in object.metadata.annotations", AnnotationProfile),
			}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: &scope,
				},
			}},
		}},
	}
}
