package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/consistencydetector"
)

// How long an informer may take to sync, or an event to arrive.
const eventTimeout = 60 * time.Second

// event is what an informer's handler was told.
type event struct {
	kind      string // add, update, delete
	name      string
	rv        string
	initial   bool   // an add of the initial list
	reference string // spec.reference of the (new) object, when the informer has it
}

func (ev event) String() string {
	return fmt.Sprintf("%s %s at %s (initial %v, reference %q)", ev.kind, ev.name, ev.rv, ev.initial, ev.reference)
}

// handler sends what the informer tells it to a channel.
func handler(events chan<- event) cache.ResourceEventHandler {
	describe := func(kind string, obj any, initial bool) event {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		ev := event{kind: kind, initial: initial}
		if m, err := meta.Accessor(obj); err == nil {
			ev.name, ev.rv = m.GetName(), m.GetResourceVersion()
		}
		if u, ok := obj.(*unstructured.Unstructured); ok {
			ev.reference = str(u, "spec", "reference")
		}
		return ev
	}
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, initial bool) { events <- describe("add", obj, initial) },
		UpdateFunc: func(_, obj any) { events <- describe("update", obj, false) },
		DeleteFunc: func(obj any) { events <- describe("delete", obj, false) },
	}
}

// dynamicInformer returns the dynamic informer check named `check`, its informer syncing from a
// watch list or (watchList false) by a list and a watch, as client-go does by default.
func dynamicInformer(check string, watchList bool) func(context.Context, *env) (string, error) {
	return func(ctx context.Context, e *env) (string, error) {
		defer e.gates.withWatchList(watchList)()
		rec := &recorder{}
		dyn, _, err := e.clients(rec)
		if err != nil {
			return "", err
		}
		factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, e.namespace,
			func(opts *metav1.ListOptions) { opts.LabelSelector = e.selector(check) })
		return informerScenario(ctx, e, check, rec, factory.ForResource(flunders).Informer(),
			factory.Start, factory.Shutdown, true, watchList)
	}
}

// metadataInformer returns the metadata informer check named `check`, like dynamicInformer.
func metadataInformer(check string, watchList bool) func(context.Context, *env) (string, error) {
	return func(ctx context.Context, e *env) (string, error) {
		defer e.gates.withWatchList(watchList)()
		rec := &recorder{}
		_, meta, err := e.clients(rec)
		if err != nil {
			return "", err
		}
		encoding, err := wantPartialObjectMetadata(ctx, e)
		if err != nil {
			return "", err
		}
		// client-go's consistency detector compares the objects a watch list delivered with
		// those of a list, whole. A server answering JSON (wardle serves no protobuf) puts
		// apiVersion and kind in each PartialObjectMetadata of a list, as Kubernetes does, and
		// client-go keeps them there while it clears them from each watch event's object: the
		// detector would report that difference of encoding alone. informerScenario compares
		// what matters itself.
		restore := consistencydetector.SetDataConsistencyDetectionForWatchListEnabledForTest(false)
		defer restore()
		factory := metadatainformer.NewFilteredSharedInformerFactory(meta, 0, e.namespace,
			func(opts *metav1.ListOptions) { opts.LabelSelector = e.selector(check) })
		informer := factory.ForResource(flunders).Informer()
		seen, err := informerScenario(ctx, e, check, rec, informer, factory.Start, factory.Shutdown, false, watchList)
		if err != nil {
			return "", err
		}
		for _, obj := range informer.GetStore().List() {
			if _, ok := obj.(*metav1.PartialObjectMetadata); !ok {
				return "", fmt.Errorf("the metadata informer holds a %T", obj)
			}
		}
		return "PartialObjectMetadataList in " + encoding + "; " + seen, nil
	}
}

// informerScenario runs one informer's life: three Flunders exist before it starts, it syncs
// from a watch list or (watchList false) a list and then a watch (checked in the requests rec
// recorded), then a fourth is created, updated and deleted, each seen as its event. `full`
// says whether the informer's objects carry the spec (the dynamic informer's do, the metadata
// informer's do not).
func informerScenario(ctx context.Context, e *env, check string, rec *recorder, informer cache.SharedIndexInformer,
	start func(<-chan struct{}), shutdown func(), full, watchList bool) (string, error) {
	dyn, _, err := e.clients(&recorder{})
	if err != nil {
		return "", err
	}
	api := dyn.Resource(flunders).Namespace(e.namespace)
	defer func() {
		// Best effort: a failure here leaves objects in a namespace of the run's label.
		_ = api.DeleteCollection(context.Background(), metav1.DeleteOptions{},
			metav1.ListOptions{LabelSelector: e.selector(check)})
	}()
	var before []string
	for i := range 3 {
		name := fmt.Sprintf("cg-%s-before-%d-%s", check, i, e.run)
		if _, err := api.Create(ctx, e.flunder(check, name, "before"), metav1.CreateOptions{}); err != nil {
			return "", fmt.Errorf("create %s: %w", name, err)
		}
		before = append(before, name)
	}

	events := make(chan event, 64)
	registration, err := informer.AddEventHandler(handler(events))
	if err != nil {
		return "", fmt.Errorf("add an event handler: %w", err)
	}
	stop := make(chan struct{})
	defer func() {
		close(stop)
		shutdown()
	}()
	start(stop)
	syncCtx, cancel := context.WithTimeout(ctx, eventTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), informer.HasSynced, registration.HasSynced) {
		return "", fmt.Errorf("the informer did not sync within %v; its requests:\n%s", eventTimeout,
			describe(rec.collection(e.namespace)))
	}

	var initial []string
	for range before {
		ev, err := next(ctx, events)
		if err != nil {
			return "", fmt.Errorf("the initial list: %w", err)
		}
		if ev.kind != "add" || !ev.initial {
			return "", fmt.Errorf("the initial list: want adds of the initial list, got %v", ev)
		}
		initial = append(initial, ev.name)
	}
	slices.Sort(initial)
	if !slices.Equal(initial, before) {
		return "", fmt.Errorf("the initial list added %v, want %v", initial, before)
	}
	if watchList {
		if err := wantWatchList(rec.collection(e.namespace), consistencydetector.IsDataConsistencyDetectionForWatchListEnabled()); err != nil {
			return "", err
		}
	} else if err := wantListThenWatch(ctx, rec, e.namespace); err != nil {
		return "", err
	}
	if err := wantListAtSync(ctx, e, check, api, informer); err != nil {
		return "", err
	}

	name := fmt.Sprintf("cg-%s-after-%s", check, e.run)
	created, err := api.Create(ctx, e.flunder(check, name, "first"), metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("create %s: %w", name, err)
	}
	if err := want(ctx, events, event{kind: "add", name: name, rv: created.GetResourceVersion(), reference: "first"}, full); err != nil {
		return "", err
	}
	if err := unstructured.SetNestedField(created.Object, "second", "spec", "reference"); err != nil {
		return "", err
	}
	updated, err := api.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		return "", fmt.Errorf("update %s: %w", name, err)
	}
	if err := want(ctx, events, event{kind: "update", name: name, rv: updated.GetResourceVersion(), reference: "second"}, full); err != nil {
		return "", err
	}
	if err := api.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return "", fmt.Errorf("delete %s: %w", name, err)
	}
	// A delete event carries the object's last state at the delete's resourceVersion, as
	// Kubernetes' storage sends it.
	deleted, err := next(ctx, events)
	if err != nil {
		return "", fmt.Errorf("waiting for the delete of %s: %w", name, err)
	}
	if deleted.kind != "delete" || deleted.name != name || deleted.rv == "" || deleted.rv == updated.GetResourceVersion() ||
		(full && deleted.reference != "second") {
		return "", fmt.Errorf("want the delete of %s (reference second) at a resourceVersion after the update's %s, got %v",
			name, updated.GetResourceVersion(), deleted)
	}
	if _, exists, _ := informer.GetStore().GetByKey(e.namespace + "/" + name); exists {
		return "", fmt.Errorf("%s is still in the informer's store after its delete event", name)
	}
	if n := len(informer.GetStore().List()); n != len(before) {
		return "", fmt.Errorf("the informer's store holds %d objects, want %d", n, len(before))
	}
	select {
	case ev := <-events:
		return "", fmt.Errorf("an unexpected event: %v", ev)
	default:
	}
	how := "a watch list (%d initial adds, bookmark, list at the same resourceVersion identical)"
	if !watchList {
		how = "a list (%d initial adds, a list at the same resourceVersion identical) and a watch from its resourceVersion"
	}
	return fmt.Sprintf("synced from "+how+", then add, update, delete", len(before)), nil
}

// next returns the next event, or an error when none comes in time.
func next(ctx context.Context, events <-chan event) (event, error) {
	select {
	case ev := <-events:
		return ev, nil
	case <-time.After(eventTimeout):
		return event{}, fmt.Errorf("no event within %v", eventTimeout)
	case <-ctx.Done():
		return event{}, ctx.Err()
	}
}

// want checks that the next event is `expected` (its reference only when `full`).
func want(ctx context.Context, events <-chan event, expected event, full bool) error {
	got, err := next(ctx, events)
	if err != nil {
		return fmt.Errorf("waiting for %v: %w", expected, err)
	}
	if !full {
		got.reference, expected.reference = "", ""
	}
	if got != expected {
		return fmt.Errorf("want the event %v, got %v", expected, got)
	}
	return nil
}

// wantWatchList checks that an informer synced from a watch list: a watch with
// sendInitialEvents=true answered 200, no list other than the consistency detector's (at the
// watch list's resourceVersion exactly), and that one present.
func wantWatchList(requests []request, detector bool) error {
	var watchLists, detectorLists int
	for _, r := range requests {
		switch {
		case r.watch() && r.query.Get("sendInitialEvents") == "true":
			if r.query.Get("allowWatchBookmarks") != "true" || r.query.Get("resourceVersionMatch") != "NotOlderThan" {
				return fmt.Errorf("a watch list without bookmarks or resourceVersionMatch=NotOlderThan:\n%s", describe(requests))
			}
			if r.status == http.StatusOK {
				watchLists++
			}
		case r.watch():
		case r.query.Get("resourceVersionMatch") == "Exact" && r.query.Get("resourceVersion") != "":
			detectorLists++
		default:
			return fmt.Errorf("the informer listed the old way (client-go falls back when a watch list fails):\n%s",
				describe(requests))
		}
	}
	if watchLists != 1 || (detector && detectorLists != 1) || (!detector && detectorLists != 0) {
		return fmt.Errorf("want one watch list answered 200 and %s, got:\n%s",
			map[bool]string{true: "the detector's list at its resourceVersion", false: "no list"}[detector],
			describe(requests))
	}
	return nil
}

// wantListAtSync checks that the informer's store, just synced from a watch list, holds what a
// list at the resourceVersion of the watch list's bookmark answers: the same objects (name, uid)
// at the same resourceVersions.
func wantListAtSync(ctx context.Context, e *env, check string, api dynamic.ResourceInterface,
	informer cache.SharedIndexInformer) error {
	rv := informer.LastSyncResourceVersion()
	list, err := api.List(ctx, metav1.ListOptions{
		LabelSelector:        e.selector(check),
		ResourceVersion:      rv,
		ResourceVersionMatch: metav1.ResourceVersionMatchExact,
	})
	if err != nil {
		return fmt.Errorf("a list at the watch list's resourceVersion %s: %w", rv, err)
	}
	if list.GetResourceVersion() != rv {
		return fmt.Errorf("a list at resourceVersion %s (Exact) answered resourceVersion %s", rv, list.GetResourceVersion())
	}
	var listed, stored []string
	for _, item := range list.Items {
		listed = append(listed, fmt.Sprintf("%s/%s@%s", item.GetName(), item.GetUID(), item.GetResourceVersion()))
	}
	for _, obj := range informer.GetStore().List() {
		m, err := meta.Accessor(obj)
		if err != nil {
			return err
		}
		stored = append(stored, fmt.Sprintf("%s/%s@%s", m.GetName(), m.GetUID(), m.GetResourceVersion()))
	}
	slices.Sort(listed)
	slices.Sort(stored)
	if !slices.Equal(listed, stored) {
		return fmt.Errorf("the informer synced %v at resourceVersion %s, a list there answers %v", stored, rv, listed)
	}
	return nil
}

// wantListThenWatch checks that an informer synced the way client-go's reflectors do without
// watch lists: one list from the watch cache (resourceVersion=0, in pages of 500) answered 200,
// then a watch with bookmarks from a resourceVersion (waited for: the reflector starts it after
// the list has filled the store), and no watch list.
func wantListThenWatch(ctx context.Context, rec *recorder, namespace string) error {
	deadline := time.Now().Add(eventTimeout)
	for {
		requests := rec.collection(namespace)
		var lists, watches []request
		for _, r := range requests {
			if r.query.Has("sendInitialEvents") {
				return fmt.Errorf("a watch list while client-go's WatchListClient is off:\n%s", describe(requests))
			}
			if r.watch() {
				watches = append(watches, r)
			} else {
				lists = append(lists, r)
			}
		}
		if len(lists) != 1 || lists[0].query.Get("resourceVersion") != "0" || lists[0].query.Get("limit") != "500" ||
			lists[0].status != http.StatusOK {
			return fmt.Errorf("want one list at resourceVersion 0 in pages of 500 answered 200, got:\n%s", describe(requests))
		}
		if len(watches) > 0 {
			w := watches[0]
			if w.status != http.StatusOK || w.query.Get("resourceVersion") == "" || w.query.Get("allowWatchBookmarks") != "true" {
				return fmt.Errorf("want a watch with bookmarks from the list's resourceVersion answered 200, got:\n%s",
					describe(requests))
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no watch within %v after the list:\n%s", eventTimeout, describe(requests))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// wantPartialObjectMetadata checks that wardle answers a list asking for PartialObjectMetadataList
// (as the metadata client asks, after protobuf) with one: the metadata client would otherwise
// quietly decode a full list.
func wantPartialObjectMetadata(ctx context.Context, e *env) (string, error) {
	client, err := rest.HTTPClientFor(e.config)
	if err != nil {
		return "", err
	}
	url := fmt.Sprintf("%s/apis/%s/%s/namespaces/%s/%s?limit=1", strings.TrimSuffix(e.config.Host, "/"),
		flunders.Group, flunders.Version, e.namespace, flunders.Resource)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"+
		"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json")
	res, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return "", err
	}
	// JSON, or protobuf: Kubernetes' envelope (the magic "k8s\x00", then a runtime.Unknown
	// naming the kind).
	var list metav1.TypeMeta
	contentType := res.Header.Get("Content-Type")
	encoding := "JSON"
	var decodeErr error
	if strings.HasPrefix(contentType, "application/vnd.kubernetes.protobuf") {
		encoding = "protobuf"
		var unknown runtime.Unknown
		if !bytes.HasPrefix(body, []byte("k8s\x00")) {
			decodeErr = fmt.Errorf("no k8s protobuf envelope")
		} else if decodeErr = unknown.Unmarshal(body[4:]); decodeErr == nil {
			list = metav1.TypeMeta{APIVersion: unknown.APIVersion, Kind: unknown.Kind}
		}
	} else {
		decodeErr = json.Unmarshal(body, &list)
	}
	if res.StatusCode != http.StatusOK || decodeErr != nil ||
		list.Kind != "PartialObjectMetadataList" || list.APIVersion != "meta.k8s.io/v1" {
		return "", fmt.Errorf("a list asking for PartialObjectMetadataList answered %d %s (%v): %q",
			res.StatusCode, contentType, decodeErr, body[:min(len(body), 300)])
	}
	return encoding, nil
}
