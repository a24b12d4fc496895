package ship

import (
	"errors"
	"reflect"
	"testing"
)

// TestPreviewMerge: before feat is merged into main, the preview names
// the session whose branch changes the same lines of the same file (and
// not the one that changes another file, nor the line far away); no tree,
// index or ref moves; then the real merges confirm it: feat merges, and
// the predicted branch conflicts in the predicted file.
func TestPreviewMerge(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	commitFile(t, repo, "shared.txt", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "Add shared")
	feat := addWorktree(t, repo, "feat")
	clash := addWorktree(t, repo, "clash")
	apart := addWorktree(t, repo, "apart")
	elsewhere := addWorktree(t, repo, "elsewhere")
	commitFile(t, feat, "shared.txt", "1\nfeat's 2\n3\n4\n5\n6\n7\n8\n9\n10\n", "feat changes line 2")
	commitFile(t, clash, "shared.txt", "1\nclash's 2\n3\n4\n5\n6\n7\n8\n9\n10\n", "clash changes line 2")
	commitFile(t, apart, "shared.txt", "1\n2\n3\n4\n5\n6\n7\n8\n9\napart's 10\n", "apart changes line 10")
	commitFile(t, elsewhere, "other.txt", "other\n", "elsewhere adds a file")
	main := rev(t, repo, "refs/heads/main")
	others := []Other{{ID: "clash", Dir: clash}, {ID: "apart", Dir: apart}, {ID: "elsewhere", Dir: elsewhere}, {ID: "gone", Dir: t.TempDir()}}

	p, err := PreviewMerge(testContext(t), feat, "main", others)
	if err != nil {
		t.Fatal(err)
	}
	want := Preview{Branch: "feat", Base: "main", Conflicts: []string{}, Others: []Predicted{{ID: "clash", Files: []string{"shared.txt"}}}}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("PreviewMerge: %+v, want %+v", p, want)
	}
	if now := rev(t, repo, "refs/heads/main"); now != main {
		t.Errorf("main moved from %s to %s during a preview", main, now)
	}
	for _, dir := range []string{repo, feat, clash, apart} {
		assertClean(t, dir)
	}

	if _, err := Merge(testContext(t), feat, "main", MergeOptions{}); err != nil {
		t.Fatalf("the previewed merge: %v", err)
	}
	if _, err := Merge(testContext(t), apart, "main", MergeOptions{}); err != nil {
		t.Errorf("apart, predicted clean, then: %v", err)
	}
	_, err = Merge(testContext(t), clash, "main", MergeOptions{})
	var conflict *ConflictError
	if !errors.As(err, &conflict) || !reflect.DeepEqual(conflict.Files, []string{"shared.txt"}) {
		t.Errorf("clash, predicted to conflict in shared.txt, then: %v", err)
	}

	// A branch that conflicts itself is told so, and nothing is predicted.
	p, err = PreviewMerge(testContext(t), clash, "main", []Other{{ID: "apart", Dir: apart}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p.Conflicts, []string{"shared.txt"}) || len(p.Others) != 0 {
		t.Errorf("the preview of a conflicting merge: %+v", p)
	}
}
