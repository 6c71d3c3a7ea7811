"""What the gateway-routed tool families share (web, image, audio, vision, x; browser and video to come).

No tool family imports another family's modules; what two of them need lives here:

* :mod:`.context` — :class:`~.context.RoutedContext` (settings, the route of a call, its access: origin,
  secret and URL guard, gateway uploads), :class:`~.context.Access`, the vendor-failure wording, the HTTP
  client of a call and the string-argument check;
* :mod:`.media` — magic-byte sniffing and saving under ``HERMES_HOME/media/``;
* :mod:`.source` — loading an image or video from a path, a ``data:`` URI or a URL.
"""
