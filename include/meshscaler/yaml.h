/*
 * yaml.h - YAML streams read into cJSON trees, so that one set of JSON
 * readers (json.h) serves input written as YAML or JSON.
 *
 * Scalars follow the YAML 1.2 core schema, as Kubernetes manifests are read:
 * a plain `null`, `~` or nothing is null; `true`/`false` (any case of the
 * first letter, or all caps) are booleans; plain integers (decimal, 0x, 0o)
 * and floats (including .inf and .nan) are numbers; everything else, and
 * every quoted scalar or one tagged !!str, is a string. Aliases are refused
 * (no manifest this project reads needs them, and they make input expand
 * without bound). Nesting deeper than MS_YAML_MAX_DEPTH is refused. As in
 * Kubernetes' strict decoding, a key given twice in one mapping is refused
 * with its path ("duplicate key \"spec.maxReplicas\""), and so is a scalar
 * holding a NUL character (a "\0" escape), which C strings cannot carry.
 *
 * Reentrant; no globals.
 */
#ifndef MESHSCALER_YAML_H
#define MESHSCALER_YAML_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "meshscaler/error.h"

#define MS_YAML_MAX_DEPTH 64

/* Every non-empty document of text[0..len) in order, as the items of a new
 * JSON array stored in *docs (the caller owns it; cJSON_Delete). A document
 * that holds nothing (a trailing "---") is left out. MS_ERR_INVALID with
 * "line L, column C: problem" in errbuf on a syntax error, an alias, too
 * deep nesting, a duplicate key or a NUL, *docs untouched; MS_ERR_NOMEM. */
ms_err_t ms_yaml_load_all(const char *text, size_t len, cJSON **docs, char *errbuf, size_t errlen);

#endif
