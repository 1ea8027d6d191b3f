/* Removing a directory tree by descriptors only (openat/unlinkat/fstatat, never a path
 * longer than one name), so that a tree deeper than PATH_MAX - what a sandbox can
 * build in its /data - is removed like any other. Symlinks are removed, never
 * followed; another file system mounted inside is never entered (the removal then
 * fails). It holds two descriptors at a time however deep the tree (each ancestor is
 * remembered by device and inode, and checked again on the way up through "..", so a
 * directory moved meanwhile makes it stop rather than leave the tree). */
#ifndef ISOLATE_RMTREE_H
#define ISOLATE_RMTREE_H

/* Removes path and everything below it: 0 once it is gone (also when it was not
 * there), -1 with errno otherwise (a caller may retry: what was removed stays so). */
int rmtree(const char *path);

#endif
