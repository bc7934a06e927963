"""Search backends over HTTP: the cards' sources (``wiki``, ``web``, ``news``) answered by
a MediaWiki, an Elasticsearch/OpenSearch ``_search`` endpoint or a generic JSON API,
configured under ``[sources.NAME]`` in ``claimfsm.toml`` (:mod:`.config`)."""

from __future__ import annotations

__all__: list[str] = []
