// quarry's tree walk: a pre-order cursor over a tree-sitter tree with the
// moves and answers of tree-sitter's own TSTreeCursor (first child, next
// sibling, parent, the current node and its field), built on the runtime's
// internal subtree layout.
//
// Why: the code walk visits every node of every file it indexes, and the
// public cursor's sibling step rebuilds its child iterator from the parent at
// every step (the alias sequence, the positions and descendant counts of the
// children before it): about 450 instructions a step, a tenth of a parse.
// This cursor keeps each level's position on its stack, so a step costs only
// the children it passes over. It reads the runtime's private structures, so
// it is compiled against the exact tree-sitter release Cargo.toml pins
// (build.rs). It is checked to move and answer as TSTreeCursor does at every
// node of the test sources (`walk::tests`) and of every input the fuzz target
// `code_source` makes.
//
// The code walk also has it step over the tokens and literals it ignores
// (`quarry_cursor_skip`), so they never cross into Rust: about a quarter of
// the nodes it would otherwise be handed.
//
// Nothing here allocates through tree-sitter or keeps a tree alive: the Rust
// side owns the cursor and borrows the tree for its lifetime.

#include <stdlib.h>
#include <string.h>

#include "tree_sitter/api.h"
#include "./subtree.h"
#include "./language.h"
#include "./length.h"
#include "./tree.h"

typedef struct {
  const Subtree *subtree;
  // Where the node starts (after its padding), as TreeCursorEntry.position.
  Length position;
  uint32_t child_index;
  uint32_t structural_child_index;
  // Visible: a named or anonymous node the public API shows, or aliased.
  bool visible;
} QuarryEntry;

typedef struct {
  const TSTree *tree;
  QuarryEntry *stack;
  uint32_t size;
  uint32_t capacity;
  // Kinds (public symbols) the moves step over where the node has no error
  // below it; none when `skip_count` is 0.
  const bool *skip;
  uint32_t skip_count;
} QuarryCursor;

// Out of memory ends the process, as it does for Rust's allocations: a walk
// cut short would store a file's symbols half read.
static void *quarry_realloc(void *block, size_t size) {
  void *grown = realloc(block, size);
  if (!grown) abort();
  return grown;
}

static void quarry_push(QuarryCursor *self, QuarryEntry entry) {
  if (self->size == self->capacity) {
    self->capacity = self->capacity ? self->capacity * 2 : 64;
    self->stack = quarry_realloc(self->stack, self->capacity * sizeof(QuarryEntry));
  }
  self->stack[self->size++] = entry;
}

// The cursor starts at the tree's root.
QuarryCursor *quarry_cursor_new(const TSTree *tree) {
  QuarryCursor *self = quarry_realloc(NULL, sizeof(QuarryCursor));
  memset(self, 0, sizeof(QuarryCursor));
  self->tree = tree;
  QuarryEntry root = {
    .subtree = &tree->root,
    .position = ts_subtree_padding(tree->root),
    .child_index = 0,
    .structural_child_index = 0,
    .visible = true,
  };
  quarry_push(self, root);
  return self;
}

// From now on the moves step over nodes whose kind `skip` marks (indexed by
// public symbol, `count` of them) and that have no error or missing node in
// them, as if they were not in the tree. The table must outlive the cursor.
void quarry_cursor_skip(QuarryCursor *self, const bool *skip, uint32_t count) {
  self->skip = skip;
  self->skip_count = count;
}

void quarry_cursor_delete(QuarryCursor *self) {
  if (!self) return;
  free(self->stack);
  free(self);
}

static inline const TSSymbol *quarry_aliases(const QuarryCursor *self, const QuarryEntry *parent) {
  return ts_language_alias_sequence(self->tree->language, parent->subtree->ptr->production_id);
}

static inline bool quarry_child_visible(Subtree child, const TSSymbol *aliases, uint32_t structural) {
  if (ts_subtree_visible(child)) return true;
  return !ts_subtree_extra(child) && aliases && aliases[structural];
}

// A visible child the moves step over (quarry_cursor_skip): of a marked kind,
// with no error or missing node in it.
static inline bool quarry_steps_over(
  const QuarryCursor *self, Subtree child, const TSSymbol *aliases, uint32_t structural
) {
  if (self->skip_count == 0 || ts_subtree_error_cost(child) > 0) return false;
  TSSymbol symbol = 0;
  if (aliases && !ts_subtree_extra(child)) symbol = aliases[structural];
  if (!symbol) symbol = ts_subtree_symbol(child);
  // ts_language_public_symbol, inlined: the error symbol is never skipped.
  if (symbol == ts_builtin_sym_error) return false;
  symbol = self->tree->language->public_symbol_map[symbol];
  return symbol < self->skip_count && self->skip[symbol];
}

typedef enum { QUARRY_NONE, QUARRY_HIDDEN, QUARRY_VISIBLE } QuarryStep;

// Looks through the children of the top entry from child `from` on, and
// pushes the first that is visible (QUARRY_VISIBLE) or hidden with visible
// nodes below it (QUARRY_HIDDEN); QUARRY_NONE if none is, with nothing pushed.
// `position` is where the previous child ends (for child 0, the top entry's
// own position: a node's padding is its first child's); `structural` is child
// `from`'s index among the children that are not extras.
// Inlined into each move: it runs once per move, and its call was a tenth of
// the walk.
static inline __attribute__((always_inline)) QuarryStep quarry_scan(
  QuarryCursor *self, uint32_t from, Length position, uint32_t structural
) {
  const QuarryEntry *parent = &self->stack[self->size - 1];
  Subtree node = *parent->subtree;
  if (ts_subtree_child_count(node) == 0) return QUARRY_NONE;
  const TSSymbol *aliases = quarry_aliases(self, parent);
  const Subtree *children = ts_subtree_children(node);
  uint32_t count = node.ptr->child_count;
  for (uint32_t i = from; i < count; i++) {
    Subtree child = children[i];
    if (i > 0) position = length_add(position, ts_subtree_padding(child));
    bool visible = quarry_child_visible(child, aliases, structural);
    bool passed = visible && quarry_steps_over(self, child, aliases, structural);
    if (!passed && (visible || ts_subtree_visible_child_count(child) > 0)) {
      QuarryEntry entry = {
        .subtree = &children[i],
        .position = position,
        .child_index = i,
        .structural_child_index = structural,
        .visible = visible,
      };
      // `parent` may move with the stack: not read after this.
      quarry_push(self, entry);
      return visible ? QUARRY_VISIBLE : QUARRY_HIDDEN;
    }
    if (!ts_subtree_extra(child)) structural++;
    position = length_add(position, ts_subtree_size(child));
  }
  return QUARRY_NONE;
}

// Where `entry` ends, and the structural index of the child after it.
static inline Length quarry_end(const QuarryEntry *entry) {
  return length_add(entry->position, ts_subtree_size(*entry->subtree));
}

static inline uint32_t quarry_structural_after(const QuarryEntry *entry) {
  return entry->structural_child_index + (ts_subtree_extra(*entry->subtree) ? 0 : 1);
}

// Down to the first visible node below the current one, through hidden
// nodes. As TSTreeCursor's goto_first_child, it relies on the runtime's count
// of a hidden node's visible children: a hidden node is entered only when it
// shows something. Only when every node it shows is stepped over
// (quarry_cursor_skip) does the scan go on after it.
bool quarry_cursor_goto_first_child(QuarryCursor *self) {
  uint32_t start = self->size;
  // Scanning the current node's children is what entering a hidden one does.
  QuarryStep step = QUARRY_HIDDEN;
  for (;;) {
    switch (step) {
      case QUARRY_VISIBLE:
        return true;
      case QUARRY_HIDDEN:
        step = quarry_scan(self, 0, self->stack[self->size - 1].position, 0);
        break;
      default: {
        if (self->size == start) return false;
        QuarryEntry passed = self->stack[--self->size];
        step = quarry_scan(self, passed.child_index + 1, quarry_end(&passed), quarry_structural_after(&passed));
      }
    }
  }
}

// The next visible node after the current one under the same visible parent:
// later children, climbing out of hidden parents, never out of a visible one.
// When there is none, the cursor stays where it was: nothing is pushed until
// a sibling is found, so the entries popped on the way stay intact. (With
// quarry_cursor_skip, a hidden node whose nodes are all stepped over may have
// been pushed and left; the cursor is then still under the same visible
// parent, which is all the code walk asks of it before goto_parent.)
bool quarry_cursor_goto_next_sibling(QuarryCursor *self) {
  uint32_t initial_size = self->size;
  while (self->size > 1) {
    QuarryEntry current = self->stack[--self->size];
    switch (quarry_scan(self, current.child_index + 1, quarry_end(&current), quarry_structural_after(&current))) {
      case QUARRY_HIDDEN:
        if (quarry_cursor_goto_first_child(self)) return true;
        // Everything it shows is stepped over: on after it.
        continue;
      case QUARRY_VISIBLE:
        return true;
      default:
        break;
    }
    // No later child here: climb out of a hidden parent, stop at a visible one.
    if (self->stack[self->size - 1].visible) break;
  }
  self->size = initial_size;
  return false;
}

bool quarry_cursor_goto_parent(QuarryCursor *self) {
  for (uint32_t i = self->size - 1; i > 0; i--) {
    if (self->stack[i - 1].visible) {
      self->size = i;
      return true;
    }
  }
  return false;
}

// The alias the current node has in its parent's production, or 0.
static TSSymbol quarry_alias(const QuarryCursor *self) {
  const QuarryEntry *entry = &self->stack[self->size - 1];
  if (self->size == 1 || ts_subtree_extra(*entry->subtree)) return 0;
  const QuarryEntry *parent = &self->stack[self->size - 2];
  return ts_language_alias_at(
    self->tree->language, parent->subtree->ptr->production_id, entry->structural_child_index);
}

TSNode quarry_cursor_node(const QuarryCursor *self) {
  const QuarryEntry *entry = &self->stack[self->size - 1];
  return ts_node_new(self->tree, entry->subtree, entry->position, quarry_alias(self));
}

// The field the current node is its parent's, as ts_tree_cursor_current_field_id:
// the field of the node itself or of a hidden ancestor below the visible parent.
TSFieldId quarry_cursor_field_id(const QuarryCursor *self) {
  for (uint32_t i = self->size - 1; i > 0; i--) {
    const QuarryEntry *entry = &self->stack[i];
    const QuarryEntry *parent = &self->stack[i - 1];
    if (i != self->size - 1 && entry->visible) break;
    if (ts_subtree_extra(*entry->subtree)) break;
    const TSFieldMapEntry *map, *end;
    ts_language_field_map(self->tree->language, parent->subtree->ptr->production_id, &map, &end);
    for (; map < end; map++) {
      if (!map->inherited && map->child_index == entry->structural_child_index) {
        return map->field_id;
      }
    }
  }
  return 0;
}
