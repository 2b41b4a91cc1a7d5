"""Per-function features and pairwise similarity for the diff matcher: the module
:mod:`kbtool.identity.matcher.features` (part of the matcher, compiled with it into its
twin; see :mod:`kbtool.identity.matcher_active`), under its first name.

Importing this module gives that very module (the compiled one when the matcher's twin
runs), so the feature stores (``shared_features``, ``feature_pool``) are one for every
caller."""

from __future__ import annotations

import sys

from kbtool.identity.matcher import features as _features

sys.modules[__name__] = _features
