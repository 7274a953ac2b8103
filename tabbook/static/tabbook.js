// tabbook: nothing needed yet beyond sphinx-design's own tab syncing.
