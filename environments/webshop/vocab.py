"""Word lists for the shipped catalogue: product types with their attributes, option groups and prices.

The five categories are WebShop's (beauty, food, fashion, furniture, electronics). Attributes are
adjective phrases as in WebShop's instruction attributes; option values are kept distinct under
WebShop's option matching (the generator checks it).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProductType:
    category: str
    noun: str  # as it appears in titles and instructions
    path: str  # the product_category breadcrumb
    attributes: tuple[str, ...]
    options: tuple[str, ...]  # keys of OPTION_POOLS
    price: tuple[int, int]  # dollars, low and high


# option pool key -> (option group name shown on the page, values separated by commas)
_POOLS = """
color | black, white, navy, gray, red, blue, green, pink, purple, beige, brown, yellow, orange, teal, olive, burgundy, ivory, khaki, coral, silver, gold
apparel | size | small, medium, large, x-large, xx-large
shoe | size | us 6, us 7, us 8, us 9, us 10, us 11, us 12
bottle | size | 4 fl oz, 8 fl oz, 12 fl oz, 16 fl oz, 32 fl oz
weight | size | 4 ounce, 8 ounce, 12 ounce, 16 ounce, 2 pound
count | size | pack of 1, pack of 2, pack of 3, pack of 6, pack of 12
bed | size | twin, full, queen, king
width | size | 24 inch, 30 inch, 36 inch, 48 inch
rug | size | 2x3 ft, 3x5 ft, 5x7 ft, 8x10 ft
cable | size | 3 ft, 6 ft, 10 ft
storage | size | 32gb, 64gb, 128gb, 256gb, 512gb
scent | lavender, vanilla, coconut, eucalyptus, citrus, unscented, jasmine
flavor | strawberry, caramel, honey, cinnamon, original, peanut butter, sea salt
style | classic, modern, vintage, sport, minimalist
material | oak, pine, bamboo, metal, walnut, acacia
pattern | solid, striped, floral, plaid, geometric
"""

# category | noun | product_category | attributes | option pools | price range in dollars
_TYPES = """
beauty | shampoo | Beauty & Personal Care › Hair Care › Shampoo & Conditioner › Shampoos | sulfate free, paraben free, tea tree, argan oil, cruelty free, color safe, natural ingredients, anti dandruff | scent bottle | 6-35
beauty | face moisturizer | Beauty & Personal Care › Skin Care › Face › Moisturizers | fragrance free, hyaluronic acid, oil free, non comedogenic, vitamin c, anti aging, dermatologist tested, spf protection | bottle | 8-60
beauty | lipstick | Beauty & Personal Care › Makeup › Lips › Lipstick | long lasting, matte finish, cruelty free, vegan formula, moisturizing, waterproof, paraben free, highly pigmented | color | 5-30
beauty | nail polish | Beauty & Personal Care › Foot, Hand & Nail Care › Nail Art & Polish › Nail Polish | quick drying, non toxic, long lasting, high gloss, chip resistant, vegan formula, easy to remove | color count | 4-20
beauty | hair dryer | Beauty & Personal Care › Hair Care › Styling Tools & Appliances › Hair Dryers | ionic technology, lightweight design, low noise, fast drying, ceramic coating, foldable handle, with diffuser | color | 20-120
beauty | body lotion | Beauty & Personal Care › Skin Care › Body › Lotions | shea butter, fast absorbing, non greasy, fragrance free, aloe vera, natural ingredients, dermatologist tested | scent bottle | 5-30
beauty | makeup brush set | Beauty & Personal Care › Tools & Accessories › Makeup Brushes & Tools › Brush Sets | synthetic bristles, cruelty free, easy to clean, soft bristles, travel friendly, with storage case, professional grade | color | 8-45
food | coffee beans | Grocery & Gourmet Food › Beverages › Coffee, Tea & Cocoa › Coffee › Whole Coffee Beans | medium roast, dark roast, fair trade, single origin, usda organic, low acid, freshly roasted, non gmo | weight | 8-40
food | green tea | Grocery & Gourmet Food › Beverages › Coffee, Tea & Cocoa › Tea › Green | usda organic, individually wrapped, non gmo, antioxidant rich, kosher certified, gluten free, sugar free | flavor count | 4-25
food | protein bar | Grocery & Gourmet Food › Snack Foods › Bars › Protein Bars | gluten free, low sugar, high protein, keto friendly, non gmo, plant based, dairy free | flavor count | 10-45
food | granola | Grocery & Gourmet Food › Breakfast Foods › Cereals › Granola | whole grain, gluten free, low sugar, non gmo, high fiber, usda organic, vegan friendly | flavor weight | 4-20
food | olive oil | Grocery & Gourmet Food › Pantry Staples › Cooking Oils › Olive Oils | extra virgin, cold pressed, usda organic, non gmo, first harvest, kosher certified, single origin | bottle | 8-40
food | chocolate bar | Grocery & Gourmet Food › Snacks & Sweets › Chocolate › Chocolate Bars | fair trade, dairy free, low sugar, gluten free, usda organic, vegan friendly, non gmo | flavor count | 5-30
food | mixed nuts | Grocery & Gourmet Food › Snack Foods › Nuts & Seeds › Mixed Nuts | lightly salted, unsalted, dry roasted, resealable bag, kosher certified, non gmo, high protein | weight | 6-30
food | sparkling water | Grocery & Gourmet Food › Beverages › Bottled Beverages, Water & Drink Mixes › Sparkling Water | zero calorie, sugar free, naturally flavored, non gmo, caffeine free, bpa free | flavor count | 5-25
fashion | t-shirt | Clothing, Shoes & Jewelry › Men › Clothing › Shirts › T-Shirts | cotton fabric, machine washable, short sleeve, relaxed fit, moisture wicking, breathable fabric, tag free, crew neck | color apparel | 8-30
fashion | running shoes | Clothing, Shoes & Jewelry › Women › Shoes › Athletic › Running | lightweight design, breathable mesh, non slip, arch support, memory foam, rubber sole, lace up | color shoe | 30-120
fashion | hoodie | Clothing, Shoes & Jewelry › Men › Clothing › Fashion Hoodies & Sweatshirts | fleece lined, kangaroo pocket, machine washable, drawstring hood, relaxed fit, cotton blend, long sleeve | color apparel | 20-60
fashion | jeans | Clothing, Shoes & Jewelry › Women › Clothing › Jeans | slim fit, stretch fabric, high waist, button closure, machine washable, five pocket, straight leg | color apparel | 25-80
fashion | backpack | Clothing, Shoes & Jewelry › Luggage & Travel Gear › Backpacks › Casual Daypacks | water resistant, laptop compartment, padded straps, lightweight design, multiple pockets, anti theft, usb charging port | color | 20-70
fashion | sunglasses | Clothing, Shoes & Jewelry › Men › Accessories › Sunglasses & Eyewear Accessories › Sunglasses | polarized lenses, uv protection, lightweight frame, scratch resistant, unisex design, with case | color style | 10-60
fashion | socks | Clothing, Shoes & Jewelry › Men › Clothing › Socks › Athletic Socks | cushioned sole, moisture wicking, cotton blend, arch support, breathable fabric, odor resistant | color apparel | 8-25
furniture | office chair | Home & Kitchen › Furniture › Home Office Furniture › Home Office Chairs | ergonomic design, lumbar support, adjustable height, swivel base, breathable mesh, padded armrests, easy assembly | color | 60-300
furniture | bookshelf | Home & Kitchen › Furniture › Living Room Furniture › Bookcases | easy assembly, solid wood, five tier, space saving, sturdy frame, anti tip | material width | 40-200
furniture | coffee table | Home & Kitchen › Furniture › Living Room Furniture › Tables › Coffee Tables | storage shelf, solid wood, easy assembly, rustic finish, lift top, water resistant | material | 60-250
furniture | sheet set | Home & Kitchen › Bedding › Sheets & Pillowcases › Sheet & Pillowcase Sets | deep pocket, wrinkle resistant, breathable fabric, microfiber, machine washable, hypoallergenic, cooling fabric | color bed | 20-80
furniture | throw pillow covers | Home & Kitchen › Home Décor Products › Decorative Pillows, Inserts & Covers › Throw Pillow Covers | double sided, hidden zipper, machine washable, soft velvet, decorative design | color pattern | 8-30
furniture | desk lamp | Home & Kitchen › Lighting & Ceiling Fans › Lamps & Shades › Desk Lamps | dimmable light, eye caring, usb charging port, touch control, adjustable arm, energy efficient | color style | 15-60
furniture | area rug | Home & Kitchen › Home Décor Products › Area Rugs, Runners & Pads › Area Rugs | non slip, machine washable, low pile, stain resistant, soft touch, pet friendly | color rug | 30-200
electronics | wireless earbuds | Electronics › Headphones, Earbuds & Accessories › Earbud Headphones | noise cancelling, long battery life, water resistant, fast charging, touch control, with charging case, bluetooth connection | color | 20-150
electronics | phone case | Electronics › Cell Phones & Accessories › Cases, Holsters & Sleeves › Basic Cases | shockproof design, slim profile, wireless charging compatible, raised edges, screen protector included, drop protection | color style | 8-35
electronics | usb c cable | Electronics › Computers & Accessories › Cables & Accessories › Cables & Interconnects › USB Cables | fast charging, braided nylon, data sync, durable design, tangle free | color cable | 6-25
electronics | power bank | Electronics › Cell Phones & Accessories › Chargers & Power Adapters › Portable Power Banks | fast charging, compact design, dual usb ports, led display, high capacity, airline approved | color | 15-60
electronics | bluetooth speaker | Electronics › Portable Audio & Video › Portable Bluetooth Speakers | waterproof design, long battery life, deep bass, portable design, built in microphone, stereo pairing | color | 20-150
electronics | micro sd card | Electronics › Computers & Accessories › Memory Cards › Micro SD Cards | high speed, with adapter, shockproof design, video recording, water resistant, lifetime warranty | storage | 8-60
electronics | gaming mouse | Electronics › Computers & Accessories › Computer Accessories & Peripherals › Mice | rgb lighting, programmable buttons, adjustable dpi, ergonomic design, lightweight design, high precision | color | 15-80
"""


def _split(text: str, sep: str = ",") -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(sep))


def _pools(text: str) -> dict[str, tuple[str, tuple[str, ...]]]:
    pools = {}
    for line in text.strip().splitlines():
        fields = _split(line, "|")
        key, group, values = fields if len(fields) == 3 else (fields[0], fields[0], fields[1])
        pools[key] = (group, _split(values))
    return pools


def _types(text: str) -> tuple[ProductType, ...]:
    types = []
    for line in text.strip().splitlines():
        category, noun, path, attrs, options, price = _split(line, "|")
        lo, hi = (int(x) for x in price.split("-"))
        types.append(ProductType(category, noun, path, _split(attrs), tuple(options.split()), (lo, hi)))
    return tuple(types)


OPTION_POOLS = _pools(_POOLS)
PRODUCT_TYPES = _types(_TYPES)

BRAND_HEADS = tuple("lu ve ka mo zi ra no te sa bri do fe ga ho jo ki pa qui ro si ta vi xa yo".split())
BRAND_TAILS = tuple("ra na lo via ton rix ora elle dex ari mo sta nio vo ka".split())

INSTRUCTION_TEMPLATES = (
    "i am looking for {attrs} {noun}",
    "i need {attrs} {noun}",
    "find me {attrs} {noun}",
    "i want to buy {attrs} {noun}",
    "i would like {attrs} {noun}",
)

DESCRIPTION_TEMPLATES = (
    "The {brand} {noun} is {attrs}. It is made for everyday use and backed by our service team.",
    "Meet the {noun} from {brand}: {attrs}. A dependable choice for home, work or travel.",
    "{brand} makes this {noun} {attrs}, so it fits right into your routine.",
    "Designed by {brand}, this {noun} is {attrs}. Simple to use and easy to love.",
)

FEATURE_TAILS = (
    "checked by our quality team",
    "loved by our customers",
    "a favorite for daily use",
    "made to last",
    "great value for the price",
)

REVIEW_TITLES = (
    "Great value",
    "Works as described",
    "Would buy again",
    "Pretty good",
    "Not bad",
    "Just what I needed",
)
REVIEW_BODIES = (
    "The {noun} arrived quickly and does the job.",
    "I use this {noun} every day and it holds up.",
    "Good {noun} for the money, no complaints.",
    "My second {noun} from {brand}, happy with it.",
)
