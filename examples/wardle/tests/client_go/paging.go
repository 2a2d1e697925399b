package main

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/pager"
)

// How many Flunders the paging check lists, and in pages of how many.
const (
	pagedFlunders = 2000
	pageSize      = 500
)

func checkPaging(ctx context.Context, e *env) (string, error) {
	dyn, _, err := e.clients(&recorder{})
	if err != nil {
		return "", err
	}
	api := dyn.Resource(flunders).Namespace(e.namespace)
	selector := metav1.ListOptions{LabelSelector: e.selector("paging")}
	if err := createMany(ctx, e, api, pagedFlunders); err != nil {
		return "", err
	}

	// By hand, as a controller's first list: limit, then continue until there is none.
	opts := selector
	opts.Limit = pageSize
	var names []string
	var pages int
	var snapshot string
	for {
		page, err := api.List(ctx, opts)
		if err != nil {
			return "", fmt.Errorf("page %d: %w", pages+1, err)
		}
		pages++
		if len(page.Items) > pageSize {
			return "", fmt.Errorf("page %d holds %d items, over the limit %d", pages, len(page.Items), pageSize)
		}
		if pages == 1 {
			snapshot = page.GetResourceVersion()
			// Written after the first page: a continued list reads the first page's snapshot,
			// so it sees neither.
			if _, err := api.Create(ctx, e.flunder("paging", "cg-page-late-"+e.run, "late"), metav1.CreateOptions{}); err != nil {
				return "", fmt.Errorf("create after the first page: %w", err)
			}
		} else if page.GetResourceVersion() != snapshot {
			return "", fmt.Errorf("page %d is at resourceVersion %s, the first at %s", pages, page.GetResourceVersion(), snapshot)
		}
		for _, item := range page.Items {
			names = append(names, item.GetName())
		}
		if page.GetContinue() == "" {
			break
		}
		if pages > pagedFlunders/pageSize+1 {
			return "", fmt.Errorf("more than %d pages of %d: the continue tokens do not end", pages, pageSize)
		}
		opts.Continue = page.GetContinue()
	}
	if want := (pagedFlunders + pageSize - 1) / pageSize; pages != want {
		return "", fmt.Errorf("%d pages, want %d", pages, want)
	}
	if err := wantPagedNames(e, names); err != nil {
		return "", err
	}

	// client-go's pager, as informers list without watch lists: now with the late one.
	var listed int
	err = pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return api.List(ctx, opts)
	}).EachListItem(ctx, metav1.ListOptions{LabelSelector: selector.LabelSelector, Limit: 300},
		func(obj runtime.Object) error {
			listed++
			return nil
		})
	if err != nil {
		return "", fmt.Errorf("client-go's pager: %w", err)
	}
	if listed != pagedFlunders+1 {
		return "", fmt.Errorf("client-go's pager listed %d Flunders, want %d", listed, pagedFlunders+1)
	}

	if err := api.DeleteCollection(ctx, metav1.DeleteOptions{}, selector); err != nil {
		return "", fmt.Errorf("delete of the collection: %w", err)
	}
	left, err := api.List(ctx, selector)
	if err != nil {
		return "", fmt.Errorf("list after the delete of the collection: %w", err)
	}
	if n := len(left.Items); n != 0 {
		return "", fmt.Errorf("%d Flunders left after the delete of the collection", n)
	}
	return fmt.Sprintf("%d Flunders in %d pages of %d at one snapshot, the pager's %d, delete of the collection",
		pagedFlunders, pages, pageSize, listed), nil
}

// createMany creates `count` Flunders of the paging check, a few at a time.
func createMany(ctx context.Context, e *env, api dynamic.ResourceInterface, count int) error {
	const workers = 8
	jobs := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				name := fmt.Sprintf("cg-page-%04d-%s", i, e.run)
				if _, err := api.Create(ctx, e.flunder("paging", name, "paged"), metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("create %s: %w", name, err)
					return
				}
			}
		}()
	}
	var err error
feed:
	for i := range count {
		select {
		case jobs <- i:
		case err = <-errs:
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if err != nil {
		return err
	}
	select {
	case err = <-errs:
		return err
	default:
		return nil
	}
}

// wantPagedNames checks that the pages listed every Flunder of the paging check once, in the
// order of their names (the order of keys in storage), and not the one created after the first
// page.
func wantPagedNames(e *env, names []string) error {
	if len(names) != pagedFlunders {
		return fmt.Errorf("the pages listed %d Flunders, want %d (the one created after the first page must not be listed)",
			len(names), pagedFlunders)
	}
	for i, name := range names {
		if want := fmt.Sprintf("cg-page-%04d-%s", i, e.run); name != want {
			return fmt.Errorf("item %d of the pages is %s, want %s", i, name, want)
		}
	}
	return nil
}
