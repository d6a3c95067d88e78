"""Server-rendered pictures for the dashboard: accessible SVG built in Python, no script, no CDN.

``svg`` holds the escaping and the few element helpers; ``charts`` the bar and line charts over
categories or days (with a table of the same numbers); ``timeline`` a person's memory at a glance;
``versions`` a fact's chain of versions with the turns each version cites. Colours come from CSS
classes in ``atlas.css`` (light and dark), never from inline styles: the CSP forbids those.
"""
