// wardle-client-go drives a wardle server with client-go the way controllers do, and prints one
// line per check: "ok   NAME: what was seen", or "FAIL NAME: what went wrong" on standard
// output and standard error, then exits with status 1. It stops at the first failure.
//
//	KUBE_FEATURE_WatchListClient=true KUBE_WATCHLIST_INCONSISTENCY_DETECTOR=true \
//	    wardle-client-go -kubeconfig wardle.kubeconfig [-namespace default] [-timeout 5m] \
//	    [-server wardle|sample-apiserver]
//
// `-server sample-apiserver` runs the checks against Kubernetes' sample-apiserver, whose
// Flunder lacks what wardle adds to it (the status subresource, toppings, the spec.reference
// field selector): the parts of the checks that use them are left out.
//
// The checks:
//
//	crud              the dynamic client's create, get, list, update, update of status and delete
//	                  of a Flunder, and the errors a controller acts on (AlreadyExists, Conflict,
//	                  NotFound)
//	paging            2,000 Flunders listed in pages (limit and continue, by hand and with
//	                  client-go's pager), a continued list reading the first page's snapshot,
//	                  and a delete of the collection
//	dynamic-informer  a shared dynamic informer, its initial state from a watch list
//	                  (sendInitialEvents and the initial-events-end bookmark), then a create,
//	                  an update and a delete as events
//	metadata-informer the same through k8s.io/client-go/metadata/metadatainformer, whose objects
//	                  are PartialObjectMetadata
//	dynamic-informer-list-watch, metadata-informer-list-watch
//	                  the same two informers with WatchListClient off (client-go's default):
//	                  a list from the watch cache, then a watch from its resourceVersion
//	apply             server-side apply of unstructured objects: a create, a conflict of two
//	                  field managers answered 409, a forced apply, list-map entries merged
//
// Both environment variables are required: the first is client-go's switch for watch lists in
// its reflectors (the list-watch checks turn it off for themselves), the second makes each
// reflector compare what its watch list delivered with a list at the same resourceVersion (and
// panic when they differ).
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/consistencydetector"
)

// flunders is the resource every check drives.
var flunders = schema.GroupVersionResource{
	Group:    "wardle.example.com",
	Version:  "v1alpha1",
	Resource: "flunders",
}

// The label every object of a run carries: its value names the run and the check.
const checkLabel = "client-go.apiserver-framework.test/check"

// env is what every check gets: the namespace it works in, the run's id, and a way to make
// clients that record their requests.
type env struct {
	namespace string
	run       string
	config    *rest.Config
	// gates: client-go's feature gates, WatchListClient switchable off for a check.
	gates *gates
	// wardle: the server is wardle, whose Flunder has a status subresource, toppings and a
	// spec.reference field selector; false for sample-apiserver.
	wardle bool
}

// clients returns a dynamic and a metadata client whose requests rec records.
func (e *env) clients(rec *recorder) (dynamic.Interface, metadata.Interface, error) {
	config := rest.CopyConfig(e.config)
	config.Wrap(rec.wrap)
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		return nil, nil, fmt.Errorf("dynamic client: %w", err)
	}
	meta, err := metadata.NewForConfig(config)
	if err != nil {
		return nil, nil, fmt.Errorf("metadata client: %w", err)
	}
	return dyn, meta, nil
}

// label returns the label value of `check` in this run.
func (e *env) label(check string) string {
	return check + "-" + e.run
}

// selector returns the label selector of `check`'s objects in this run.
func (e *env) selector(check string) string {
	return checkLabel + "=" + e.label(check)
}

// check is one named check; it returns a line that says what it saw, or an error.
type check struct {
	name string
	run  func(ctx context.Context, e *env) (string, error)
}

var checks = []check{
	{"crud", checkCRUD},
	{"paging", checkPaging},
	{"dynamic-informer", dynamicInformer("dynamic-informer", true)},
	{"metadata-informer", metadataInformer("metadata-informer", true)},
	{"dynamic-informer-list-watch", dynamicInformer("dynamic-informer-list-watch", false)},
	{"metadata-informer-list-watch", metadataInformer("metadata-informer-list-watch", false)},
	{"apply", checkApply},
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "the kubeconfig of the wardle server (required)")
	namespace := flag.String("namespace", "default", "the namespace of the Flunders the checks make")
	timeout := flag.Duration("timeout", 5*time.Minute, "how long all checks together may take")
	server := flag.String("server", "wardle", "the server driven: wardle or sample-apiserver")
	flag.Parse()
	// Before client-go reads its feature gates: the environment's, WatchListClient switchable
	// off for the checks of informers that list and then watch.
	gates := &gates{env: clientfeatures.FeatureGates()}
	clientfeatures.ReplaceFeatureGates(gates)
	if *kubeconfig == "" {
		failf("setup", "-kubeconfig is required")
	}
	if *server != "wardle" && *server != "sample-apiserver" {
		failf("setup", "-server is wardle or sample-apiserver, not %q", *server)
	}
	// Without these the informers would list and watch the old way, or skip the comparison, and
	// the informer checks would prove less than they say.
	if !gates.Enabled(clientfeatures.WatchListClient) {
		failf("setup", "client-go's WatchListClient feature is off: set KUBE_FEATURE_WatchListClient=true")
	}
	if !consistencydetector.IsDataConsistencyDetectionForWatchListEnabled() {
		failf("setup", "the watch-list consistency detector is off: set KUBE_WATCHLIST_INCONSISTENCY_DETECTOR=true")
	}
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		failf("setup", "loading %s: %v", *kubeconfig, err)
	}
	// Controllers raise client-go's default of 5 requests a second; the paging check writes
	// thousands of objects.
	config.QPS = -1
	config.UserAgent = "wardle-client-go"
	e := &env{
		namespace: *namespace,
		run:       strconv.FormatInt(rand.Int63n(1<<30), 36),
		config:    config,
		wardle:    *server == "wardle",
		gates:     gates,
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	for _, c := range checks {
		started := time.Now()
		seen, err := c.run(ctx, e)
		if err != nil {
			failf(c.name, "%v", err)
		}
		fmt.Printf("ok   %s: %s (%.1f s)\n", c.name, seen, time.Since(started).Seconds())
	}
	fmt.Printf("all %d checks passed\n", len(checks))
}

// failf reports check `name` as failed and exits with status 1.
func failf(name, format string, args ...any) {
	line := fmt.Sprintf("FAIL %s: %s", name, fmt.Sprintf(format, args...))
	fmt.Println(line)
	fmt.Fprintln(os.Stderr, line)
	os.Exit(1)
}

// gates is client-go's feature gates as the environment sets them (KUBE_FEATURE_<name>), but
// with WatchListClient off while listWatch is set.
type gates struct {
	env       clientfeatures.Gates
	listWatch atomic.Bool
}

func (g *gates) Enabled(feature clientfeatures.Feature) bool {
	if feature == clientfeatures.WatchListClient && g.listWatch.Load() {
		return false
	}
	return g.env.Enabled(feature)
}

// withWatchList turns WatchListClient off unless watchList (client-go's reflectors read it when
// they are made); the function it returns restores it.
func (g *gates) withWatchList(watchList bool) func() {
	g.listWatch.Store(!watchList)
	return func() { g.listWatch.Store(false) }
}
