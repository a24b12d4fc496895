package kubecheck

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
)

// Object is a decoded Kubernetes object of one of the types below.
type Object = runtime.Object

var (
	scheme  = runtime.NewScheme()
	decoder runtime.Decoder
)

func init() {
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme,
		appsv1.AddToScheme,
		networkingv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	// Strict: a field the type does not have (a typo, a wrong indentation,
	// a field from another API version) or a field given twice is an
	// error, not silently dropped as the API server's lenient decoding
	// of client-side YAML would do.
	decoder = json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme,
		json.SerializerOptions{Yaml: true, Strict: true})
}

// DecodeStrict decodes one YAML (or JSON) document into its Kubernetes API
// type. It fails on unknown or duplicate fields, on a missing apiVersion
// or kind, and on kinds outside core/v1, apps/v1 and networking.k8s.io/v1.
func DecodeStrict(doc []byte) (Object, error) {
	obj, gvk, err := decoder.Decode(doc, nil, nil)
	if err != nil {
		if runtime.IsStrictDecodingError(err) && gvk != nil {
			return nil, fmt.Errorf("strict decoding of %s: %w", gvk.Kind, err)
		}
		return nil, err
	}
	return obj, nil
}
