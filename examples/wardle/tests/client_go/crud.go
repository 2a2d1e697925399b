package main

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// flunder returns a v1alpha1 Flunder named `name` in the run's namespace, labelled as an object
// of `check`, referring to `reference`.
func (e *env) flunder(check, name, reference string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": flunders.GroupVersion().String(),
		"kind":       "Flunder",
		"metadata": map[string]any{
			"name":      name,
			"namespace": e.namespace,
			"labels":    map[string]any{checkLabel: e.label(check)},
		},
		"spec": map[string]any{"reference": reference},
	}}
}

// str returns the string at `fields` of obj ("" when absent).
func str(obj *unstructured.Unstructured, fields ...string) string {
	s, _, _ := unstructured.NestedString(obj.Object, fields...)
	return s
}

func checkCRUD(ctx context.Context, e *env) (string, error) {
	dyn, _, err := e.clients(&recorder{})
	if err != nil {
		return "", err
	}
	api := dyn.Resource(flunders).Namespace(e.namespace)
	name := "cg-crud-" + e.run

	created, err := api.Create(ctx, e.flunder("crud", name, "target"), metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("create: %w", err)
	}
	if created.GetUID() == "" || created.GetResourceVersion() == "" || created.GetCreationTimestamp().Time.IsZero() {
		return "", fmt.Errorf("create answered without uid, resourceVersion or creationTimestamp: %v", created.Object)
	}
	// sample-apiserver's defaulting: a reference without a type refers to a Flunder.
	if got := str(created, "spec", "referenceType"); got != "Flunder" {
		return "", fmt.Errorf("create: spec.referenceType = %q, want the default Flunder", got)
	}
	if _, err := api.Create(ctx, e.flunder("crud", name, "target"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("a second create of %s: want AlreadyExists, got %v", name, err)
	}

	got, err := api.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("get: %w", err)
	}
	if got.GetUID() != created.GetUID() || got.GetResourceVersion() != created.GetResourceVersion() {
		return "", fmt.Errorf("get answered uid %s at %s, create %s at %s",
			got.GetUID(), got.GetResourceVersion(), created.GetUID(), created.GetResourceVersion())
	}

	selectors := []string{"metadata.name=" + name}
	if e.wardle {
		selectors = append(selectors, "spec.reference=target")
	}
	for _, selector := range selectors {
		list, err := api.List(ctx, metav1.ListOptions{LabelSelector: e.selector("crud"), FieldSelector: selector})
		if err != nil {
			return "", fmt.Errorf("list with field selector %s: %w", selector, err)
		}
		if len(list.Items) != 1 || list.Items[0].GetName() != name {
			return "", fmt.Errorf("list with field selector %s: want [%s], got %d items", selector, name, len(list.Items))
		}
		if list.GetResourceVersion() == "" {
			return "", fmt.Errorf("list with field selector %s: the list has no resourceVersion", selector)
		}
	}

	if err := unstructured.SetNestedField(got.Object, "moved", "spec", "reference"); err != nil {
		return "", err
	}
	updated, err := api.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		return "", fmt.Errorf("update: %w", err)
	}
	if updated.GetResourceVersion() == got.GetResourceVersion() || str(updated, "spec", "reference") != "moved" {
		return "", fmt.Errorf("update answered resourceVersion %s (was %s), spec.reference %q",
			updated.GetResourceVersion(), got.GetResourceVersion(), str(updated, "spec", "reference"))
	}
	// got still carries the resourceVersion before the update.
	if err := unstructured.SetNestedField(got.Object, "stale", "spec", "reference"); err != nil {
		return "", err
	}
	if _, err := api.Update(ctx, got, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		return "", fmt.Errorf("an update at the old resourceVersion: want Conflict, got %v", err)
	}

	if e.wardle {
		// The status subresource: the status changes, the spec sent beside it does not.
		if err := unstructured.SetNestedField(updated.Object, int64(2), "status", "replicas"); err != nil {
			return "", err
		}
		if err := unstructured.SetNestedField(updated.Object, "ignored", "spec", "reference"); err != nil {
			return "", err
		}
		status, err := api.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		if err != nil {
			return "", fmt.Errorf("update of status: %w", err)
		}
		replicas, _, _ := unstructured.NestedInt64(status.Object, "status", "replicas")
		if replicas != 2 || str(status, "spec", "reference") != "moved" {
			return "", fmt.Errorf("update of status answered status.replicas %d, spec.reference %q; want 2 and moved",
				replicas, str(status, "spec", "reference"))
		}
	}

	wrongUID := types.UID("00000000-0000-0000-0000-000000000000")
	err = api.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrongUID}})
	if !apierrors.IsConflict(err) {
		return "", fmt.Errorf("a delete with another uid as precondition: want Conflict, got %v", err)
	}
	uid := created.GetUID()
	if err := api.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
		return "", fmt.Errorf("delete: %w", err)
	}
	if _, err := api.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("get after delete: want NotFound, got %v", err)
	}
	if err := api.Delete(ctx, name, metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("a second delete: want NotFound, got %v", err)
	}
	seen := "create (defaulted), AlreadyExists, get, list by field selectors, update, Conflict at an old resourceVersion, "
	if e.wardle {
		seen += "update of status, "
	}
	return seen + "delete with uid preconditions, NotFound", nil
}
