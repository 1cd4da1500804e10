"""A map as a standalone SVG file: Natural Earth's countries under the layers, no tiles, no network.

Equirectangular, with the horizontal scale shrunk by the cosine of the middle
latitude so shapes keep their proportions near the map's centre.
"""

from __future__ import annotations

import math
from html import escape
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import geopandas as gpd

WIDTH = 960
LAYER_MAX_FEATURES = 20_000  # past this a drawing is megabytes no viewer opens gladly
COLOURS = ("#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
LAND, BORDER, SEA = "#ece8df", "#b8b2a6", "#f7fbff"


class _Frame:
    """Degrees to pixels for ``bounds`` (west, south, east, north) padded by 5 %."""

    def __init__(self, bounds: tuple[float, float, float, float]) -> None:
        west, south, east, north = bounds
        pad_x, pad_y = max((east - west) * 0.05, 0.05), max((north - south) * 0.05, 0.05)
        self.west, self.east = west - pad_x, east + pad_x
        self.kx = math.cos(math.radians((south + north) / 2))
        # At most twice as wide as high: a strip of places along a parallel still shows its land.
        pad_y = max(pad_y, ((east - west + 2 * pad_x) * self.kx / 2 - (north - south)) / 2)
        self.south, self.north = max(south - pad_y, -89.9), min(north + pad_y, 89.9)
        self.scale = WIDTH / ((self.east - self.west) * self.kx)
        self.height = max(int((self.north - self.south) * self.scale), 120)

    def x(self, lon: float) -> float:
        return round((lon - self.west) * self.kx * self.scale, 1)

    def y(self, lat: float) -> float:
        return round((self.north - lat) * self.scale, 1)

    def xy(self, lon: float, lat: float) -> str:
        return f"{self.x(lon)},{self.y(lat)}"


def _path(frame: _Frame, geometry: Any) -> str:
    """SVG path data of a (multi)polygon or (multi)line."""
    parts = getattr(geometry, "geoms", [geometry])
    rings = []
    for part in parts:
        if part.geom_type == "Polygon":
            for ring in (part.exterior, *part.interiors):
                rings.append("M" + " L".join(frame.xy(x, y) for x, y in ring.coords) + "Z")
        elif part.geom_type in ("LineString", "LinearRing"):
            rings.append("M" + " L".join(frame.xy(x, y) for x, y in part.coords))
    return " ".join(rings)


def _shape(frame: _Frame, geometry: Any, colour: str, label: str) -> str:
    title = f"<title>{escape(label)}</title>" if label else ""
    if geometry.geom_type in ("Point", "MultiPoint"):
        return "".join(
            f'<circle cx="{frame.x(p.x)}" cy="{frame.y(p.y)}" r="3.5" '
            f'fill="{colour}" fill-opacity="0.8" stroke="#fff" stroke-width="0.6">{title}</circle>'
            for p in getattr(geometry, "geoms", [geometry])
        )
    polygon = "Polygon" in geometry.geom_type
    fill = f'fill="{colour}" fill-opacity="0.35"' if polygon else 'fill="none"'
    return f'<path d="{_path(frame, geometry)}" {fill} stroke="{colour}" stroke-width="1.2">{title}</path>'


def render_svg(layers: list[tuple[str, gpd.GeoDataFrame, str | None]], title: str, world: gpd.GeoDataFrame) -> str:
    """An SVG map of ``layers`` ((name, frame in EPSG:4326, label column)) over ``world``'s countries."""
    from shapely.geometry import box

    bounds = [frame.total_bounds for _, frame, _ in layers if not frame.empty]
    if bounds:
        extent = (
            min(b[0] for b in bounds),
            min(b[1] for b in bounds),
            max(b[2] for b in bounds),
            max(b[3] for b in bounds),
        )
    else:
        extent = (-180.0, -60.0, 180.0, 85.0)
    frame = _Frame(extent)
    view = box(frame.west, frame.south, frame.east, frame.north)
    land = world[world.intersects(view)].geometry.clip_by_rect(frame.west, frame.south, frame.east, frame.north)
    body = [f'<rect width="{WIDTH}" height="{frame.height}" fill="{SEA}"/>']
    body += [
        f'<path d="{_path(frame, shape)}" fill="{LAND}" stroke="{BORDER}" stroke-width="0.6"/>'
        for shape in land
        if not shape.is_empty
    ]
    legend = []
    for index, (name, layer, label) in enumerate(layers):
        colour = COLOURS[index % len(COLOURS)]
        layer = layer.head(LAYER_MAX_FEATURES)
        labels = layer[label].astype(str).tolist() if label and label in layer.columns else [""] * len(layer)
        body.append(f'<g id="layer-{index}" data-layer="{escape(name)}">')
        body += [
            _shape(frame, shape, colour, text)
            for shape, text in zip(layer.geometry, labels, strict=True)
            if shape is not None and not shape.is_empty
        ]
        body.append("</g>")
        legend.append(
            f'<rect x="10" y="{34 + 18 * index}" width="12" height="12" fill="{colour}"/>'
            f'<text x="28" y="{44 + 18 * index}" font-size="12">{escape(name)}</text>'
        )
    heading = f'<text x="10" y="22" font-size="16" font-weight="bold">{escape(title)}</text>'
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{frame.height}" '
        f'viewBox="0 0 {WIDTH} {frame.height}" font-family="sans-serif">'
        + "".join(body)
        + heading
        + "".join(legend)
        + "</svg>"
    )
